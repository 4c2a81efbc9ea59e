"""API tokens from the account page: DRF keeps one token per user, so "create" makes a new
key (replacing any old one) and "revoke" deletes it. Bots send it as
``Authorization: Token <key>`` and on the WebSocket as ``/ws/?token=<key>``."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from rest_framework.authtoken.models import Token


def token_regenerate(*, user: AbstractBaseUser) -> Token:
    """A fresh token for ``user``; the old key stops working in the same transaction."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def token_revoke(*, user: AbstractBaseUser) -> bool:
    """Delete the user's token; True if there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)


def token_get(*, user: AbstractBaseUser) -> Token | None:
    return Token.objects.filter(user=user).first()
