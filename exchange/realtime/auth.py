"""WebSocket authentication: the session cookie (browsers) or ``?token=`` (bots)."""

from __future__ import annotations

from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware


@database_sync_to_async
def _user_for_token(key: str):
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token is not None and token.user.is_active else None


class TokenAuthMiddleware(BaseMiddleware):
    """A valid ``token`` query parameter authenticates the connection as its user."""

    async def __call__(self, scope, receive, send):
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        keys = query.get("token")
        if keys and len(keys[0]) <= 64:
            user = await _user_for_token(keys[0])
            if user is not None:
                scope = {**scope, "user": user}
        return await super().__call__(scope, receive, send)


def TokenOrSessionAuthStack(inner):  # noqa: N802 - named like Channels' own stacks
    return AuthMiddlewareStack(TokenAuthMiddleware(inner))
