"""The best-offer page written from plain rows (exchange/api/hot.py) is exactly what
``OfferSerializer`` writes for the same offers, key order included: for every reader, for
offers with and without a best bid, with a closing time, in another time zone, and (should
one ever come) for an offer that is not open."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from exchange.api import hot
from exchange.api import serializers as s
from exchange.models import Offer
from exchange.selectors import orders as order_selectors
from exchange.services import orders
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from tests.api.conftest import client_for
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db


@pytest.fixture
def readers():
    """A book with offers in every state (one open offer with a best bid, one with none,
    one closing later, a closed and a withdrawn one), and who may read it."""
    market = pencils_market()
    seller, alice = UserFactory(username="seller"), UserFactory(username="alice")
    staff = StaffFactory(username="staff")
    sold = orders.offer_publish(
        seller=seller, market=market, constraint="lot <= 100 AND price >= 1"
    )
    orders.offer_publish(
        seller=seller,
        market=market,
        constraint="lot BETWEEN 1 AND 50 AND price >= 2.00",
        closes_at=timezone.now() + dt.timedelta(days=2),
    )
    orders.offer_publish(seller=seller, market=market, constraint="lot = 7 AND price >= 9")
    gone = orders.offer_publish(seller=seller, market=market, constraint="lot = 3 AND price >= 1")
    orders.bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 1.50")
    orders.bid_place(buyer=alice, market=market, constraint="lot = 20 AND price <= 2.25")
    orders.offer_withdraw(seller=seller, offer_id=gone.pk)
    matching_cycle_run()
    offer_close(offer_id=sold.pk, staff=staff)
    orders.bid_place(buyer=alice, market=market, constraint="lot = 40 AND price <= 2.10")
    matching_cycle_run()
    assert {o.state for o in Offer.objects.all()} == {"open", "closed", "withdrawn"}
    return [AnonymousUser(), seller, alice, staff]


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


def test_offers_from_rows_read_as_the_serializer_writes_them(readers):
    for user in readers:
        request = _request(user)
        assert _as_rows(request) == _as_serialized(request)
    shown = _as_rows(_request(readers[1]))
    assert {dict(o)["mine"] for o in shown} == {True}
    assert {dict(o)["best_value"] is None for o in shown} == {True, False}
    assert any(dict(o)["closes_at"] for o in shown)
    assert any(dict(o)["trade"] for o in shown)  # the closed one, written the ordinary way
    with timezone.override(zoneinfo.ZoneInfo("America/New_York")):  # not UTC: no "Z"
        request = _request(readers[0])
        assert _as_rows(request) == _as_serialized(request)
        assert dict(_as_rows(request)[0])["created_at"].endswith(("-05:00", "-04:00"))


def test_the_best_offer_page_shows_the_open_offers_as_the_serializer_does(readers):
    seller = readers[1]
    body = client_for(seller).get("/api/v1/best-offers/?limit=2&offset=1").json()
    open_offers = list(order_selectors.offer_list(state=Offer.State.OPEN))
    assert body["count"] == len(open_offers) == 2
    assert body["previous"] is not None and body["next"] is None
    request = _request(seller)
    expected = [s.OfferSerializer(o, context={"request": request}).data for o in open_offers[1:]]
    assert body["results"] == expected
    assert body["results"][0]["mine"] is True
