"""A view's throttles look at their Redis windows in one round trip
(``exchange.throttling.OneTripThrottles``) and decide as each throttle alone did: the same
keys, the same counts, the same 429 with the same wait, and every throttle asked even after
one refuses (issue 36)."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache import caches
from django.test import Client, RequestFactory
from redis.exceptions import ConnectionError as RedisConnectionError

from exchange.api import urls
from exchange.throttling import KeyedThrottle, OneTripThrottles

pytestmark = pytest.mark.django_db


@pytest.fixture
def prefix(settings) -> str:
    """Counters of this test only: a key prefix of its own in the shared Redis cache."""
    name = f"test-{uuid.uuid4().hex}"
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": name}}
    return name


@pytest.fixture
def script_calls(monkeypatch) -> list[list[str]]:
    """The keys of every call of the throttles' window script."""
    calls: list[list[str]] = []
    backend = caches["default"]
    script = type(backend).script

    def counted(self, text):
        run = script(self, text)

        def call(*, keys, args):
            calls.append(list(keys))
            return run(keys=keys, args=args)

        return call

    monkeypatch.setattr(type(backend), "script", counted)
    return calls


def _window(prefix: str, scope: str) -> int:
    redis = caches["default"].redis()
    keys = [k for k in redis.keys(f"{prefix}:*") if f"throttle_{scope}_" in k.decode()]
    return sum(redis.zcard(k) for k in keys)


def test_an_anonymous_read_looks_at_both_its_windows_in_one_call(prefix, script_calls):
    assert Client().get("/api/v1/best-offers/").status_code == 200
    assert len(script_calls) == 1 and len(script_calls[0]) == 2
    assert ":throttle_anon_" in script_calls[0][0] and ":throttle_user_" in script_calls[0][1]
    assert (_window(prefix, "anon"), _window(prefix, "user")) == (1, 1)


def test_a_refusing_window_still_lets_the_others_count(prefix, rates):
    """DRF asks every throttle, even after one refused: the user window counts a request
    the anon window refused, as before."""
    rates(anon="2/min", user="10/min")
    client = Client()
    statuses = [client.get("/api/v1/markets/").status_code for _ in range(4)]
    assert statuses == [200, 200, 429, 429]
    assert (_window(prefix, "anon"), _window(prefix, "user")) == (2, 4)
    body = client.get("/api/v1/markets/").json()
    assert body["error"]["code"] == "throttled"
    assert 0 < body["error"]["retry_after"] <= 60


def test_the_longest_wait_of_the_refusing_windows_is_answered(prefix, rates):
    rates(anon="1/min", user="1/hour")
    client = Client()
    assert client.get("/api/v1/markets/").status_code == 200
    refused = client.get("/api/v1/markets/")
    assert refused.status_code == 429
    assert 60 < int(refused["Retry-After"]) <= 3600
    assert refused.json()["error"]["retry_after"] == int(refused["Retry-After"])


def test_a_window_alone_answers_as_it_does_in_one_trip(prefix, rates):
    """Outside a view's check (a throttle asked by itself) the window is looked at alone,
    with the same script and answer."""
    rates(anon="2/min", user="10/min")
    assert [Client().get("/api/v1/markets/").status_code for _ in range(3)] == [200, 200, 429]
    throttle = KeyedThrottle("anon", "127.0.0.1")  # the anon window of the client above
    assert throttle.allow_request(RequestFactory().get("/"), None) is False
    assert 0 < throttle.wait() <= 60


def test_without_redis_the_windows_let_the_request_through(prefix, monkeypatch, rates):
    rates(anon="1/min")

    def unreachable(*args, **kwargs):
        raise RedisConnectionError("Redis is restarting")

    monkeypatch.setattr("exchange.throttling.windows_look", unreachable)
    statuses = [Client().get("/api/v1/markets/").status_code for _ in range(3)]
    assert statuses == [200, 200, 200]


def test_every_api_view_checks_its_throttles_in_one_trip():
    views = []
    for pattern in urls.urlpatterns:
        for route in getattr(pattern, "url_patterns", [pattern]):
            cls = getattr(route.callback, "cls", None)
            if cls is not None and cls.__module__.startswith("exchange.api"):
                views.append(cls)
    checked = [v for v in views if issubclass(v, OneTripThrottles)]
    assert len(checked) >= 20
