"""Logging out closes, after commit, every WebSocket that the ended session opened."""

from __future__ import annotations

from exchange.realtime.streams import principal_revoke, session_group
from exchange.services.side_effects import after_commit


def session_sockets_close(*, session_key: str | None) -> None:
    """Close the WebSockets authenticated by the (now ended) session ``session_key``, so they
    stop receiving personal notifications. Called by every logout view after Django's logout."""
    if session_key:
        groups = [session_group(session_key)]
        after_commit("closing logged-out sockets", lambda: principal_revoke(groups=groups))
