"""Django's signals wired to the services that close the WebSockets of a login that lost its
authority, and a request's start and end to the lookups it may keep (``exchange.selectors.
lookups``). Signals rather than calls in each view, because Django itself ends sessions and
changes passwords and users in many places (its logout, the admin's password and user forms,
``set_password`` in a shell), and every one of them must close the sockets; the work itself
is in ``exchange.services.sessions`` and happens after commit."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.core.signals import request_finished, request_started
from django.db.backends.signals import connection_created
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from exchange.selectors.accounts import AuthorityLost, user_authority_lost
from exchange.selectors.lookups import (
    pool_check_install,
    request_lookups_begin,
    request_lookups_end,
)
from exchange.services.sessions import (
    session_sockets_close,
    user_session_sockets_close,
    user_sockets_close,
)

# Where pre_save leaves its finding for post_save on the same instance.
_LOST = "_exchange_authority_lost"


@receiver(user_logged_out, dispatch_uid="exchange.logout_closes_sockets")
def _logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    # Sent before Django flushes the session, so its key is still the one that ends.
    session_sockets_close(session_key=request.session.session_key)


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="exchange.user_before_save")
def _user_before_save(
    sender: Any, instance: Any, raw: bool, update_fields: Any, **kwargs: Any
) -> None:
    if raw:  # loading fixtures: no sockets to close
        return
    fields = frozenset(update_fields) if update_fields is not None else None
    setattr(instance, _LOST, user_authority_lost(user=instance, update_fields=fields))


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="exchange.user_saved")
def _user_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    lost = instance.__dict__.pop(_LOST, None)
    if lost is AuthorityLost.ACCOUNT:
        user_sockets_close(user_id=instance.pk)
    elif lost is AuthorityLost.SESSIONS:
        user_session_sockets_close(user_id=instance.pk)


@receiver(post_delete, sender=settings.AUTH_USER_MODEL, dispatch_uid="exchange.user_deleted")
def _user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    user_sockets_close(user_id=instance.pk)


@receiver(request_started, dispatch_uid="exchange.request_lookups_begin")
def _request_started(sender: Any, **kwargs: Any) -> None:
    request_lookups_begin()


@receiver(request_finished, dispatch_uid="exchange.request_lookups_end")
def _request_finished(sender: Any, **kwargs: Any) -> None:
    request_lookups_end()


@receiver(connection_created, dispatch_uid="exchange.pool_check_install")
def _connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    pool_check_install(getattr(connection, "pool", None))
