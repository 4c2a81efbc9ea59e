"""WebSocket authentication: the session cookie (browsers) or ``?token=`` (bots)."""

from __future__ import annotations

from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware

from exchange.selectors.tokens import token_user

_token_user = database_sync_to_async(token_user)


class TokenAuthMiddleware(BaseMiddleware):
    """A valid ``token`` query parameter authenticates the connection as its user; the key
    stays in the scope (``auth_token``) so that revoking it can close the connection. A
    token that is not valid (mistyped, regenerated, revoked) marks the scope
    (``auth_failed``): the consumer closes such a connection with 4001 rather than serve it
    as anonymous, which a bot would not notice (issue 39)."""

    async def __call__(self, scope, receive, send):
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        keys = query.get("token")
        if keys:
            user = await _token_user(key=keys[0])
            if user is not None:
                scope = {**scope, "user": user, "auth_token": keys[0]}
            else:
                scope = {**scope, "auth_failed": True}
        return await super().__call__(scope, receive, send)


def TokenOrSessionAuthStack(inner):  # named like Channels' own stacks
    return AuthMiddlewareStack(TokenAuthMiddleware(inner))
