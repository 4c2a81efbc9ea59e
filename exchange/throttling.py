"""Throttles outside DRF's views (the login, admin login and registration pages, the UI's
constraint check) on the same client identity, cache and rates as the API's throttles.

The client is DRF's ``get_ident`` under ``NUM_PROXIES`` (settings: 0 by default, so a
client-supplied ``X-Forwarded-For`` is ignored and the peer address counts). The counters
live in the default cache, which is Redis, so a limit holds across every worker process.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
from collections.abc import Callable, Iterable

from django.http import HttpRequest, HttpResponse
from redis.exceptions import RedisError
from rest_framework import throttling
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

log = logging.getLogger(__name__)


def client_ident(request: HttpRequest) -> str:
    """The one identity of the client behind a request, for every throttle."""
    # DRF's get_ident reads only ``request.META``, which a plain Django request has too.
    return str(BaseThrottle().get_ident(request) or "unknown")  # type: ignore[arg-type]


def account_key(username: str) -> str:
    """The throttle key of an account name as typed (case and spaces folded), hashed so that
    any text makes a plain cache key."""
    return hashlib.sha256(username.strip().lower().encode("utf-8", "surrogatepass")).hexdigest()


class OpenWhenRedisIsDown:
    """A throttle that lets the request through while its Redis cache is unreachable: orders
    are accepted while Redis restarts (docs/reliability.md), and a throttle must not turn
    that into a 500."""

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)  # type: ignore[misc]
        except (RedisError, OSError):
            log.warning("throttle cache unreachable; request let through", exc_info=True)
            return True


class AnonRateThrottle(OpenWhenRedisIsDown, throttling.AnonRateThrottle):
    pass


class UserRateThrottle(OpenWhenRedisIsDown, throttling.UserRateThrottle):
    pass


class ScopedRateThrottle(OpenWhenRedisIsDown, throttling.ScopedRateThrottle):
    pass


class KeyedThrottle(OpenWhenRedisIsDown, SimpleRateThrottle):
    """DRF's sliding-window throttle for one ``scope`` (a rate in ``DEFAULT_THROTTLE_RATES``)
    and one key (a client or an account name)."""

    def __init__(self, scope: str, ident: str) -> None:
        self.scope = scope
        self.ident = ident
        super().__init__()

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.ident}


def throttle_wait(request: HttpRequest, checks: Iterable[tuple[str, str]]) -> int | None:
    """Count this request against each ``(scope, key)``; the seconds to wait if any of them
    is over its rate, else None. Every check is counted, so an account locked by one client
    stays locked for all of them."""
    waits = []
    for scope, key in checks:
        throttle = KeyedThrottle(scope, key)
        # SimpleRateThrottle uses neither the view nor DRF's request wrapper (see get_cache_key).
        if not throttle.allow_request(request, None):
            waits.append(throttle.wait() or 1)
    return math.ceil(max(waits)) if waits else None


def too_many(wait: int, message: str) -> HttpResponse:
    response = HttpResponse(
        f"{message} Try again in {wait} seconds.\n", status=429, content_type="text/plain"
    )
    response["Retry-After"] = str(wait)
    return response


def login_throttled(field: str = "username") -> Callable:
    """Throttle a page's POSTs per client (``login_client``) and per account named in the form
    field ``field`` (``login_account``): a clear 429 with ``Retry-After`` past either rate."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method == "POST":
                checks = [("login_client", client_ident(request))]
                account = request.POST.get(field, "")
                if account:
                    checks.append(("login_account", account_key(account)))
                wait = throttle_wait(request, checks)
                if wait is not None:
                    return too_many(wait, "Too many attempts from here or for this account.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorate
