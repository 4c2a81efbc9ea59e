"""DRF's token authentication with its lookup as one plain statement
(``exchange.selectors.lookups.token_with_user``; that module says why)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from exchange.selectors.lookups import token_with_user


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``, answered exactly as DRF's class answers it."""

    def authenticate_credentials(self, key: str) -> tuple[User, Token]:
        token = token_with_user(key=key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token
