"""Throttles outside DRF's views (the login, admin login and registration pages, the UI's
constraint check) on the same client identity, cache and rates as the API's throttles.

Logging in is throttled twice: every attempt counts against its client (``login_client``),
and failed attempts count against the account name *from that client* (``login_account``,
see ``LoginFailures``). Failures are keyed on account and client together so that nobody
can lock a user out by failing to log in as them from elsewhere; guessing one account's
password from many addresses is bounded by each address's own client rate.

The client is DRF's ``get_ident`` with ``NUM_PROXIES`` 0: the peer address, which uvicorn
has already taken from ``X-Forwarded-For`` if (and only if) the connection came from a proxy
that ``TRUSTED_PROXIES`` lists (``exchange/settings/proxies.py``). The counters
live in the default cache, which is Redis, so a limit holds across every worker process.

Every throttle here keeps DRF's sliding window (a request counts for ``duration`` seconds
after it was allowed; a refused one is not counted) but stores it as a Redis sorted set
checked and updated by one script (``_WINDOW``): one round trip instead of DRF's read and
write of a pickled list, and no race between two requests of one client that both read
the list before either wrote it back.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import secrets
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

from django.core.cache import caches
from django.http import HttpRequest, HttpResponse
from redis.exceptions import RedisError
from rest_framework import throttling
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

log = logging.getLogger(__name__)


def client_ident(request: HttpRequest) -> str:
    """The one identity of the client behind a request, for every throttle."""
    # DRF's get_ident reads only ``request.META``, which a plain Django request has too
    # (its stubs ask for a DRF Request).
    return str(BaseThrottle().get_ident(request) or "unknown")  # type: ignore[arg-type]


def client_of(request: Any) -> str:
    """Whom a request counts against where a limit is per client: its account, or without
    a login its client (``client_ident``); as ``exchange.realtime.limits.principal_of``
    names a connection's."""
    user = request.user
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    return f"addr:{client_ident(request)}"


def failure_key(username: str, client: str) -> str:
    """The throttle key of failed logins as account name ``username`` (case and spaces
    folded) from ``client``, hashed so that any text makes a plain cache key."""
    text = f"{username.strip().lower()}\n{client}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# KEYS the windows, one or more; ARGV five per key: now, duration (seconds), the limit, a
# unique member for this request, "1" to record it if allowed. For each key: drops what left
# the window (DRF drops a request exactly ``duration`` old too), then refuses at the limit
# without recording, or records. Returns {allowed, requests in the window, the oldest one's
# time or false} per key, one after another; times go back as strings, since Redis would
# truncate a Lua number to an integer.
_WINDOW = """
local out = {}
for i, key in ipairs(KEYS) do
  local at = (i - 1) * 5
  local now = tonumber(ARGV[at + 1])
  local duration = tonumber(ARGV[at + 2])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - duration)
  local count = redis.call('ZCARD', key)
  local allowed = 0
  if count < tonumber(ARGV[at + 3]) then
    allowed = 1
    if ARGV[at + 5] == '1' then
      redis.call('ZADD', key, now, ARGV[at + 4])
      redis.call('EXPIRE', key, math.ceil(duration))
      count = count + 1
    end
  end
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  out[#out + 1] = allowed
  out[#out + 1] = count
  out[#out + 1] = oldest[2] or false
end
return out
"""

# While a view checks its throttles (``OneTripThrottles``), the windows they would look at,
# each with its throttle and its key, to be looked at together; None the rest of the time.
_deferred: ContextVar[list[tuple[WindowThrottle, str]] | None] = ContextVar(
    "throttle_windows_deferred", default=None
)


class OpenWhenRedisIsDown:
    """A throttle that lets the request through while its Redis cache is unreachable: orders
    are accepted while Redis restarts (docs/reliability.md), and a throttle must not turn
    that into a 500."""

    def allow_request(self, request, view) -> bool:
        try:
            # A mixin: super() is the DRF throttle after it in the MRO, unknown to mypy.
            return super().allow_request(request, view)  # type: ignore[misc]
        except (RedisError, OSError):
            log.warning("throttle cache unreachable; request let through", exc_info=True)
            return True


class WindowThrottle(SimpleRateThrottle):
    """DRF's ``SimpleRateThrottle`` with its window kept by ``_WINDOW`` (the module's
    docstring says why); ``count = False`` looks without recording an allowed request."""

    count = True
    # Set by SimpleRateThrottle.__init__ from the rate; the stubs do not declare them.
    num_requests: int
    duration: int

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        backend = caches["default"]
        if not hasattr(backend, "script"):  # not exchange.cache.RedisCache: DRF's own way
            return super().allow_request(request, view)
        self.now = self.timer()
        deferred = _deferred.get()
        if deferred is not None:  # looked at with the view's other throttles (windows_look)
            deferred.append((self, key))
            return True
        return windows_look(backend, [(self, key)])[0]

    def window_args(self) -> list[Any]:
        """This request's arguments to ``_WINDOW`` for this throttle's window."""
        return [
            repr(self.now),
            self.duration,
            self.num_requests,
            f"{self.now!r}:{secrets.token_hex(4)}",
            "1" if self.count else "0",
        ]

    def window_seen(self, count: int, oldest: Any) -> None:
        """What ``_WINDOW`` answered for this throttle's window, kept as DRF's ``wait``
        reads it: a newest-first list, of which only its length and its last item (the
        oldest request) matter."""
        self.history = [float(oldest)] * int(count) if oldest else []


def windows_look(backend: Any, windows: list[tuple[WindowThrottle, str]]) -> list[bool]:
    """Whether each ``(throttle, key)`` of ``windows`` allows the request, all looked at
    (and recorded) by one call of ``_WINDOW``."""
    # A key of its own: DRF's pickled list may still sit under the plain key.
    keys = [backend.make_key(f"{key}:window") for _, key in windows]
    args = [arg for throttle, _ in windows for arg in throttle.window_args()]
    answer = backend.script(_WINDOW)(keys=keys, args=args)
    allowed = []
    for i, (throttle, _) in enumerate(windows):
        ok, count, oldest = answer[3 * i : 3 * i + 3]
        throttle.window_seen(count, oldest)
        allowed.append(bool(ok))
    return allowed


class OneTripThrottles:
    """Mix into an API view (before the DRF class): its throttles' Redis windows are looked at
    in one round trip rather than one each (an anonymous read has two, ``anon`` and ``user``,
    both keyed on its client: a seventh of the best-offer page's CPU, issue 36). Every
    throttle is still asked, and the view is throttled, exactly as DRF's ``check_throttles``
    does it; while Redis is unreachable the windows let the request through, as each
    throttle would (``OpenWhenRedisIsDown``)."""

    def check_throttles(self, request: Any) -> None:
        # A mixin: the DRF view's methods after it in the MRO, which mypy does not know.
        throttles = self.get_throttles()  # type: ignore[attr-defined]
        windows: list[tuple[WindowThrottle, str]] = []
        token = _deferred.set(windows)
        try:
            allowed = [throttle.allow_request(request, self) for throttle in throttles]
        finally:
            _deferred.reset(token)
        if windows:
            try:
                seen = windows_look(caches["default"], windows)
            except (RedisError, OSError):
                log.warning("throttle cache unreachable; request let through", exc_info=True)
            else:
                looked = {id(throttle): ok for (throttle, _), ok in zip(windows, seen, strict=True)}
                allowed = [looked.get(id(t), ok) for t, ok in zip(throttles, allowed, strict=True)]
        durations = [t.wait() for t, ok in zip(throttles, allowed, strict=True) if not ok]
        if durations:
            waits = [duration for duration in durations if duration is not None]
            self.throttled(request, max(waits, default=None))  # type: ignore[attr-defined]  # as above


class AnonRateThrottle(OpenWhenRedisIsDown, throttling.AnonRateThrottle, WindowThrottle):
    pass


class UserRateThrottle(OpenWhenRedisIsDown, throttling.UserRateThrottle, WindowThrottle):
    pass


class ScopedRateThrottle(OpenWhenRedisIsDown, throttling.ScopedRateThrottle, WindowThrottle):
    pass


class KeyedThrottle(OpenWhenRedisIsDown, WindowThrottle):
    """DRF's sliding-window throttle for one ``scope`` (a rate in ``DEFAULT_THROTTLE_RATES``)
    and one key. With ``count=False`` it only looks: an allowed request is not recorded."""

    def __init__(self, scope: str, ident: str, *, count: bool = True) -> None:
        self.scope = scope
        self.ident = ident
        self.count = count
        super().__init__()

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.ident}


def throttle_wait(
    request: HttpRequest, checks: Iterable[tuple[str, str]], *, count: bool = True
) -> int | None:
    """The seconds to wait if any ``(scope, key)`` of ``checks`` is at its rate, else None.
    With ``count`` (the default) the request is also recorded against each key that allows
    it; without, nothing is written."""
    waits = []
    for scope, key in checks:
        throttle = KeyedThrottle(scope, key, count=count)
        # SimpleRateThrottle uses neither the view nor DRF's request wrapper (see get_cache_key).
        if not throttle.allow_request(request, None):
            waits.append(throttle.wait() or 1)
    return math.ceil(max(waits)) if waits else None


class LoginFailures:
    """The failed logins as one account name from one client (scope ``login_account``).

    ``wait()`` looks without counting, before the password is checked; ``record()`` counts
    a failure once it is known. A successful login is never counted, and one client's
    failures never hold back another client."""

    def __init__(self, request: HttpRequest, username: str) -> None:
        self.request = request
        self.checks = [("login_account", failure_key(username, client_ident(request)))]

    def wait(self) -> int | None:
        return throttle_wait(self.request, self.checks, count=False)

    def record(self) -> None:
        throttle_wait(self.request, self.checks)


def too_many(wait: int, message: str) -> HttpResponse:
    response = HttpResponse(
        f"{message} Try again in {wait} seconds.\n", status=429, content_type="text/plain"
    )
    response["Retry-After"] = str(wait)
    return response


def login_throttled(field: str = "username") -> Callable:
    """Throttle a login or registration page's POSTs: each counts against its client
    (``login_client``); one that leaves nobody logged in is a failure of the account named in
    form field ``field`` from that client (``LoginFailures``). Past either rate: a clear 429
    with ``Retry-After``, and the view does not run."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method != "POST":
                return view(request, *args, **kwargs)
            account = request.POST.get(field, "")
            failures = LoginFailures(request, account) if account else None
            waits = [
                throttle_wait(request, [("login_client", client_ident(request))]),
                failures.wait() if failures else None,
            ]
            wait = max((w for w in waits if w is not None), default=None)
            if wait is not None:
                return too_many(wait, "Too many attempts from here for this account.")
            response = view(request, *args, **kwargs)
            if failures and not request.user.is_authenticated:
                failures.record()
            return response

        return wrapped

    return decorate
