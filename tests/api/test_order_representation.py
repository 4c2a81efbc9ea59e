"""The hand-written ``to_representation`` of offers and bids (exchange/api/serializers.py)
gives exactly what DRF's generic ``ModelSerializer.to_representation`` gives over the
declared fields, key order included, for orders in every state and every reader."""

from __future__ import annotations

import zoneinfo

import pytest
from django.utils import timezone
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from exchange.api import serializers as s
from exchange.models import Bid
from exchange.selectors import orders as order_selectors

pytestmark = pytest.mark.django_db


def _context(user) -> dict:
    if user is None:
        return {}
    request = Request(APIRequestFactory().get("/"))
    request.user = user
    return {"request": request}


def _generic(serializer: serializers.ModelSerializer, instance) -> list:
    return list(serializers.ModelSerializer.to_representation(serializer, instance).items())


def test_offers_read_the_same_as_the_generic_serializer(every_state):
    offers = list(order_selectors.offer_list())
    assert len(offers) == 4
    for user in every_state:
        context = _context(user)
        for offer in offers:
            serializer = s.OfferSerializer(offer, context=context)
            assert list(serializer.data.items()) == _generic(serializer, offer)
    with timezone.override(zoneinfo.ZoneInfo("America/New_York")):  # not UTC: no "Z"
        for offer in offers:
            serializer = s.OfferSerializer(offer, context=_context(every_state[1]))
            assert list(serializer.data.items()) == _generic(serializer, offer)
            assert serializer.data["created_at"].endswith(("-05:00", "-04:00"))
    closed = next(o for o in offers if o.state == "closed")
    shown = s.OfferSerializer(closed, context=_context(every_state[-1])).data
    assert shown["trade"]["buyer"] is not None  # staff see the parties
    assert s.OfferSerializer(offers, many=True).data[0]["id"] == offers[0].pk


def test_bids_read_the_same_as_the_generic_serializer(every_state):
    bids = list(Bid.objects.select_related("market").order_by("id"))
    standings = order_selectors.bid_standings(bids=bids)
    assert any(standings.values())
    for user in every_state:
        for context in (
            {**_context(user), "standings": standings},
            {**_context(user), "standings": {}},
        ):
            for bid in bids:
                serializer = s.BidSerializer(bid, context=context)
                assert list(serializer.data.items()) == _generic(serializer, bid)
    assert {b.state for b in bids} >= {"withdrawn"}
    assert max(b.version for b in bids) == 2
