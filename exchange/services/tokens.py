"""API tokens: the one place that creates and revokes them. DRF keeps one token per user;
bots send it as ``Authorization: Token <key>`` and on the WebSocket as ``/ws/?token=<key>``.

Revoking a key (by replacing or deleting it) also closes, after commit, every WebSocket
that authenticated with it, so a revoked key stops receiving personal notifications at once.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from rest_framework.authtoken.models import Token

from exchange.realtime.streams import principal_revoke, token_group
from exchange.services.side_effects import after_commit


def _close_sockets_after_commit(keys: list[str]) -> None:
    if keys:
        groups = [token_group(key) for key in keys]
        after_commit("closing revoked token sockets", lambda: principal_revoke(groups=groups))


def token_issue(*, user: User) -> Token:
    """The user's token, created on first use (``POST /api/v1/auth/token/``)."""
    token, _ = Token.objects.get_or_create(user=user)
    return token


def token_regenerate(*, user: User) -> Token:
    """A fresh token for ``user``; the old key stops working in the same transaction and its
    sockets close after commit."""
    with transaction.atomic():
        old = list(
            Token.objects.select_for_update().filter(user=user).values_list("key", flat=True)
        )
        Token.objects.filter(user=user).delete()
        token = Token.objects.create(user=user)
        _close_sockets_after_commit(old)
    return token


def token_revoke(*, user: User) -> bool:
    """Delete the user's token and close its sockets after commit; True if there was one."""
    with transaction.atomic():
        old = list(
            Token.objects.select_for_update().filter(user=user).values_list("key", flat=True)
        )
        Token.objects.filter(user=user).delete()
        _close_sockets_after_commit(old)
    return bool(old)
