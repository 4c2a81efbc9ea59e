"""The hand-written ``to_representation`` of offers and bids (exchange/api/serializers.py)
gives exactly what DRF's generic ``ModelSerializer.to_representation`` gives over the
declared fields, key order included, for orders in every state and every reader."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from exchange.api import serializers as s
from exchange.models import Bid, Offer
from exchange.selectors import orders as order_selectors
from exchange.services import orders
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db


@pytest.fixture
def book():
    market = pencils_market()
    seller, alice, bob = (UserFactory(username=n) for n in ("seller", "alice", "bob"))
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
    unmatched = orders.offer_publish(
        seller=seller, market=market, constraint="lot = 7 AND price >= 9"
    )
    gone = orders.offer_publish(seller=seller, market=market, constraint="lot = 3 AND price >= 1")
    orders.bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 1.50")
    amended = orders.bid_place(buyer=bob, market=market, constraint="lot = 20 AND price <= 2.25")
    withdrawn = orders.bid_place(buyer=bob, market=market, constraint="lot = 30 AND price <= 1.20")
    matching_cycle_run()
    orders.bid_amend(
        buyer=bob, bid_id=amended.pk, constraint="lot = 20 AND price <= 2.40", version=1
    )
    orders.bid_withdraw(buyer=bob, bid_id=withdrawn.pk)
    orders.offer_withdraw(seller=seller, offer_id=gone.pk)
    matching_cycle_run()
    offer_close(offer_id=sold.pk, staff=staff)
    orders.bid_place(buyer=alice, market=market, constraint="lot = 40 AND price <= 2.10")
    matching_cycle_run()
    assert {o.state for o in Offer.objects.all()} == {"open", "closed", "withdrawn"}
    assert Offer.objects.get(pk=unmatched.pk).state == "open"
    return [None, AnonymousUser(), seller, alice, bob, staff]


def _context(user) -> dict:
    if user is None:
        return {}
    request = Request(APIRequestFactory().get("/"))
    request.user = user
    return {"request": request}


def _generic(serializer: serializers.ModelSerializer, instance) -> list:
    return list(serializers.ModelSerializer.to_representation(serializer, instance).items())


def test_offers_read_the_same_as_the_generic_serializer(book):
    offers = list(order_selectors.offer_list())
    assert len(offers) == 4
    for user in book:
        context = _context(user)
        for offer in offers:
            serializer = s.OfferSerializer(offer, context=context)
            assert list(serializer.data.items()) == _generic(serializer, offer)
    with timezone.override(zoneinfo.ZoneInfo("America/New_York")):  # not UTC: no "Z"
        for offer in offers:
            serializer = s.OfferSerializer(offer, context=_context(book[1]))
            assert list(serializer.data.items()) == _generic(serializer, offer)
            assert serializer.data["created_at"].endswith(("-05:00", "-04:00"))
    closed = next(o for o in offers if o.state == "closed")
    shown = s.OfferSerializer(closed, context=_context(book[-1])).data
    assert shown["trade"]["buyer"] is not None  # staff see the parties
    assert s.OfferSerializer(offers, many=True).data[0]["id"] == offers[0].pk


def test_bids_read_the_same_as_the_generic_serializer(book):
    bids = list(Bid.objects.select_related("market").order_by("id"))
    standings = order_selectors.bid_standings(bids=bids)
    assert any(standings.values())
    for user in book:
        for context in (
            {**_context(user), "standings": standings},
            {**_context(user), "standings": {}},
        ):
            for bid in bids:
                serializer = s.BidSerializer(bid, context=context)
                assert list(serializer.data.items()) == _generic(serializer, bid)
    assert {b.state for b in bids} >= {"withdrawn"}
    assert max(b.version for b in bids) == 2
