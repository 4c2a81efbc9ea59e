"""The best-offer page written from plain rows (exchange/api/hot.py) is exactly what
``OfferSerializer`` writes for the same offers, key order included: for every reader, for
offers with and without a best bid, with a closing time, in another time zone, and (should
one ever come) for an offer that is not open."""

from __future__ import annotations

import zoneinfo
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from exchange.api import hot
from exchange.api import serializers as s
from exchange.models import Offer
from exchange.selectors import orders as order_selectors
from exchange.services.market_counts import market_counts_compact
from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db


def _request(user) -> Request:
    request = Request(APIRequestFactory().get("/"))
    request.user = user
    return request


def _as_serialized(request: Request) -> list[list]:
    offers = order_selectors.offer_list()
    return [list(s.OfferSerializer(o, context={"request": request}).data.items()) for o in offers]


def _as_rows(request: Request) -> list[list]:
    rows = list(hot.offer_rows(order_selectors.offer_list()))
    return [list(shown.items()) for shown in hot.offers_shown(rows, request)]


def test_offers_from_rows_read_as_the_serializer_writes_them(every_state):
    readers = [user for user in every_state if user is not None]
    for user in readers:
        request = _request(user)
        assert _as_rows(request) == _as_serialized(request)
    seller = User.objects.get(username="seller")
    shown = _as_rows(_request(seller))
    assert {dict(o)["mine"] for o in shown} == {True}
    assert {dict(o)["best_value"] is None for o in shown} == {True, False}
    assert any(dict(o)["closes_at"] for o in shown)
    assert any(dict(o)["trade"] for o in shown)  # the closed one, written the ordinary way
    with timezone.override(zoneinfo.ZoneInfo("America/New_York")):  # not UTC: no "Z"
        request = _request(AnonymousUser())
        assert _as_rows(request) == _as_serialized(request)
        assert dict(_as_rows(request)[0])["created_at"].endswith(("-05:00", "-04:00"))


def test_the_best_offer_page_shows_the_open_offers_as_the_serializer_does(every_state):
    seller = User.objects.get(username="seller")
    body = client_for(seller).get("/api/v1/best-offers/?limit=2&offset=1").json()
    open_offers = list(order_selectors.offer_list(state=Offer.State.OPEN))
    assert body["count"] == len(open_offers) == 2
    assert body["previous"] is not None and body["next"] is None
    request = _request(seller)
    expected = [s.OfferSerializer(o, context={"request": request}).data for o in open_offers[1:]]
    assert body["results"] == expected
    assert body["results"][0]["mine"] is True


def _page(path: str, user=None) -> tuple[int, dict]:
    response = client_for(user).get(path)
    return response.status_code, response.json()


def test_compiled_rows_read_what_the_orm_reads(every_state):
    queryset = hot.offer_rows(order_selectors.offer_list())
    compiled, count = hot.CompiledRows.of(queryset)
    assert count == compiled.count() == queryset.count()
    assert compiled.rows() == list(queryset)
    for start, stop in [(0, 1), (1, 3), (2, 100), (50, 60)]:
        assert compiled.rows(stop - start, start) == list(queryset[start:stop])
    assert compiled.rows(None, 2) == list(queryset[2:])


def test_a_page_compiled_once_per_filter_answers_as_the_orm_did(every_state, monkeypatch):
    """The same pages with the kept statements and with the ORM compiling them each time
    (the kept ones cleared before every request), for each market filter, page bounds and a
    pattern that is refused."""
    seller = User.objects.get(username="seller")
    paths = [
        "/api/v1/best-offers/",
        "/api/v1/best-offers/?limit=1",
        "/api/v1/best-offers/?limit=1&offset=1",
        "/api/v1/best-offers/?offset=5",
        "/api/v1/best-offers/?market=office.supplies.pencils",
        "/api/v1/best-offers/?market=office.>&limit=1&offset=1",
        "/api/v1/best-offers/?market=*.supplies.*",
        "/api/v1/best-offers/?market=nowhere.at.all",
        "/api/v1/best-offers/?market=",
        "/api/v1/best-offers/?market=office..x",
        "/api/v1/best-offers/?market=x&market=office.supplies.pencils",
    ]
    hot._compiled.clear()
    fresh = {}
    for path in paths:
        hot._compiled.clear()
        fresh[path] = _page(path, seller)
    assert fresh[paths[0]][1]["count"] == 2
    assert fresh[paths[7]][1]["count"] == 0
    assert fresh[paths[9]][0] == 400
    for _ in range(2):  # the second time round, every filter set is kept
        for path in paths:
            assert _page(path, seller) == fresh[path]
    assert len(hot._compiled) == 6  # none, pencils, office.>, *.supplies.*, nowhere, ""


def test_a_kept_statement_reads_the_book_as_it_is_now(every_state):
    first = _page("/api/v1/best-offers/")[1]
    Offer.objects.filter(state=Offer.State.OPEN).update(state=Offer.State.WITHDRAWN)
    assert first["count"] == 2
    assert _page("/api/v1/best-offers/")[1] == {
        "count": 0,
        "next": None,
        "previous": None,
        "results": [],
    }


_SEGMENT = st.sampled_from(["office", "supplies", "pencils", "*", ">", "", "x", "é", " "])
_FILTERS = st.one_of(
    st.none(),
    st.lists(_SEGMENT, min_size=1, max_size=4).map(".".join),
    st.text(max_size=12),
)
_BOUND = st.one_of(
    st.none(),
    st.integers(min_value=-2, max_value=5).map(str),
    st.sampled_from(["", "x", "1.5", " 1", "99999999999999999999"]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(market=_FILTERS, limit=_BOUND, offset=_BOUND, signed_in=st.booleans())
def test_any_page_kept_or_compiled_afresh_answers_the_same(
    every_state, market, limit, offset, signed_in
):
    """Whatever the filter and bounds (patterns malformed or not, bounds DRF ignores), a
    page answered from the kept statements equals the one the ORM compiles afresh: status
    and body."""
    query = {
        name: value
        for name, value in (("market", market), ("limit", limit), ("offset", offset))
        if value is not None and "\x00" not in value
    }
    path = "/api/v1/best-offers/" + (f"?{urlencode(query)}" if query else "")
    reader = User.objects.get(username="seller") if signed_in else None
    hot._compiled.clear()
    fresh = _page(path, reader)
    kept = _page(path, reader)  # the filter set is kept now, if it parsed
    assert kept == fresh
    assert fresh[0] in (200, 400)


def test_the_page_counts_the_open_offers_from_the_maintained_counts(every_state):
    """The best-offer page's count (the markets' maintained counts) is the number of open
    offers the ORM counts, for each filter, as offers leave and enter the open state and
    before and after the counts are folded."""
    patterns = [None, "", "office.supplies.pencils", "office.>", "*.supplies.*", "nowhere.x"]

    def check() -> None:
        for pattern in patterns:
            expected = order_selectors.offer_list(market=pattern, state=Offer.State.OPEN).count()
            assert order_selectors.open_offer_count(market=pattern) == expected, pattern
            path = "/api/v1/best-offers/" + ("" if pattern is None else f"?market={pattern}")
            hot._compiled.clear()
            assert _page(path)[1]["count"] == expected, pattern
            assert _page(path)[1]["count"] == expected, pattern  # kept

    assert order_selectors.open_offer_count() == 2
    check()
    first = Offer.objects.filter(state=Offer.State.OPEN).order_by("id").first()
    Offer.objects.filter(pk=first.pk).update(state=Offer.State.WITHDRAWN)
    assert order_selectors.open_offer_count() == 1
    check()
    Offer.objects.filter(pk=first.pk).update(state=Offer.State.OPEN)
    market_counts_compact()
    assert order_selectors.open_offer_count() == 2
    check()
