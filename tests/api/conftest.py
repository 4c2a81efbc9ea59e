from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.settings import api_settings
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from exchange.models import Offer
from exchange.services import orders
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(
            HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}"
        )
    return client


@pytest.fixture
def world(db):
    """A pencils market with a seller's offer, two buyers' bids (bob best), and staff."""
    market = pencils_market()
    users = {
        "seller": UserFactory(username="seller"),
        "buyer": UserFactory(username="alice"),
        "other": UserFactory(username="bob"),
        "staff": StaffFactory(username="staff"),
    }
    offer = offer_publish(
        seller=users["seller"], market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
    )
    bid = bid_place(buyer=users["buyer"], market=market, constraint="lot = 10 AND price <= 1.50")
    other_bid = bid_place(
        buyer=users["other"], market=market, constraint="lot = 20 AND price <= 1.70"
    )
    matching_cycle_run()
    clients = {name: client_for(user) for name, user in users.items()}
    clients["anonymous"] = client_for(None)
    return {
        "market": market,
        "offer": offer,
        "bid": bid,
        "other_bid": other_bid,
        "users": users,
        "clients": clients,
    }


@pytest.fixture
def every_state(db):
    """A book with offers in every state (one closed, one withdrawn, two open: one closing
    later, one with no bid) and bids amended and withdrawn; who may read it (None: no
    request at all)."""
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


@pytest.fixture
def rates(monkeypatch):
    """``rates(anon="2/min", ...)``: DRF's throttle rates for this test, the others kept."""

    def set_rates(**overrides: str) -> None:
        monkeypatch.setattr(
            SimpleRateThrottle,
            "THROTTLE_RATES",
            {**api_settings.DEFAULT_THROTTLE_RATES, **overrides},
        )

    return set_rates
