"""What a change to a user row takes away from the logins that user holds."""

from __future__ import annotations

from enum import Enum

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser


class AuthorityLost(Enum):
    SESSIONS = "sessions"  # the password changed: every session ends, the API token holds
    ACCOUNT = "account"  # deactivated: nothing of the user's logs in any more


def user_authority_lost(
    *, user: AbstractBaseUser, update_fields: frozenset[str] | None
) -> AuthorityLost | None:
    """What saving ``user`` (not yet saved; ``update_fields`` as given to ``save``) takes
    away, compared with the stored row; None for a new user or a change of other fields."""
    watched = {"password", "is_active"}
    if (
        user.pk is None
        or user._state.adding
        or (update_fields is not None and not watched & update_fields)
    ):
        return None
    stored = get_user_model()._default_manager.filter(pk=user.pk).values(*watched).first()
    if stored is None:
        return None
    if stored["is_active"] and not user.is_active:
        return AuthorityLost.ACCOUNT
    if stored["password"] != user.password:
        return AuthorityLost.SESSIONS
    return None
