"""Closing, after commit, the WebSockets of a login that lost its authority: a session that
ended (logout), every session of a user whose password changed, every connection of a user
who was deactivated or deleted. ``exchange/receivers.py`` calls these from Django's signals,
so every path (the UI, the admin, a shell) closes them."""

from __future__ import annotations

from exchange.realtime.streams import (
    account_group,
    account_sessions_group,
    principal_revoke,
    session_group,
)
from exchange.services.side_effects import after_commit


def _close_after_commit(what: str, groups: list[str]) -> None:
    after_commit(what, lambda: principal_revoke(groups=groups))


def session_sockets_close(*, session_key: str | None) -> None:
    """Close the WebSockets authenticated by the (ending) session ``session_key``; other
    sessions of the same user keep theirs."""
    if session_key:
        _close_after_commit("closing logged-out sockets", [session_group(session_key)])


def user_session_sockets_close(*, user_id: int) -> None:
    """Close every WebSocket that user ``user_id`` opened with a login session (a changed
    password ends them all); connections with the user's API token stay, since the token
    still holds."""
    _close_after_commit("closing sockets of ended sessions", [account_sessions_group(user_id)])


def user_sockets_close(*, user_id: int) -> None:
    """Close every WebSocket of user ``user_id``, by session or token (the account can no
    longer log in)."""
    _close_after_commit("closing sockets of a closed account", [account_group(user_id)])
