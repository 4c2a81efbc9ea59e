"""The throttles' Redis window (exchange/throttling.py, ``WindowThrottle``) decides exactly as
DRF's own list-in-the-cache throttle would, request by request, and so does its ``wait``."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache.backends.locmem import LocMemCache
from django.test import RequestFactory
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.throttling import SimpleRateThrottle

from exchange.throttling import KeyedThrottle


class Window(KeyedThrottle):
    rate = "3/m"


class Reference(SimpleRateThrottle):
    """DRF's sliding window as it ships: the history as a pickled list in a cache."""

    rate = "3/m"

    def __init__(self, cache: LocMemCache, ident: str) -> None:
        super().__init__()
        self.cache = cache
        self.ident = ident

    def get_cache_key(self, request, view) -> str:
        return f"reference-{self.ident}"


def _at(throttle: SimpleRateThrottle, now: float) -> SimpleRateThrottle:
    throttle.timer = lambda: now  # type: ignore[method-assign]  # a fixed clock for this throttle
    return throttle


def test_three_a_minute_refuses_the_fourth_until_the_first_is_a_minute_old():
    ident = uuid.uuid4().hex
    request = RequestFactory().get("/")
    asks = [(0.0, True), (1.0, True), (2.5, True), (3.0, False), (59.9, False), (60.0, True)]
    for now, expected in asks:
        assert _at(Window("test", ident), now).allow_request(request, None) is expected, now
    # Refused requests were not counted: at 60.5 the window holds 1.0, 2.5 and 60.0.
    refused = _at(Window("test", ident), 60.5)
    assert refused.allow_request(request, None) is False
    # DRF's wait: what is left of the oldest's minute, shared by the requests still to come.
    assert refused.wait() == pytest.approx(60 - (60.5 - 1.0))
    # A request exactly a minute old has left the window (as in DRF): 1.0 at 61.0.
    assert _at(Window("test", ident), 61.0).allow_request(request, None) is True


def test_looking_without_counting_records_nothing():
    ident = uuid.uuid4().hex
    request = RequestFactory().get("/")
    for now in (0.0, 1.0, 2.0, 3.0, 4.0):
        assert _at(Window("test", ident, count=False), now).allow_request(request, None)
    assert _at(Window("test", ident), 5.0).allow_request(request, None)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.5, 7.25, 20.0, 30.0, 59.75, 60.0]), st.booleans()),
        min_size=1,
        max_size=25,
    )
)
def test_the_window_decides_and_waits_as_drfs_list_does(steps):
    ident = uuid.uuid4().hex
    request = RequestFactory().get("/")
    reference_cache = LocMemCache(f"reference-{ident}", {})
    now = 1_000.0
    for gap, counted in steps:
        now += gap
        ours = _at(Window("test", ident, count=counted), now)
        theirs = _at(Reference(reference_cache, ident), now)
        allowed = theirs.allow_request(request, None)
        if allowed and not counted:
            # DRF's throttle always records; looking only is undone on the reference.
            history = reference_cache.get(theirs.key)
            reference_cache.set(theirs.key, history[1:], theirs.duration)
        assert ours.allow_request(request, None) is allowed
        if not allowed:
            assert ours.wait() == pytest.approx(theirs.wait())
