"""Reads of API tokens: the account page's current token and the WebSocket's token login."""

from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

TOKEN_MAX_LENGTH = 64


def token_get(*, user: User) -> Token | None:
    return Token.objects.filter(user=user).first()


def token_user(*, key: str) -> User | None:
    """The active user whose API token is ``key``, or None."""
    if not key or len(key) > TOKEN_MAX_LENGTH:
        return None
    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token is not None and token.user.is_active else None
