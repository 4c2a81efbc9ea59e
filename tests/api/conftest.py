from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

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
