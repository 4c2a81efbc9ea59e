"""Offers and bids on the API carry ``set_aside_reason``: why the engine left the order out
of matching (issue 15), or null while it takes part."""

from __future__ import annotations

import pytest

from exchange.models import Bid, Offer
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from tests.factories import UserFactory, pencils_market

from .conftest import client_for

pytestmark = pytest.mark.django_db

# A stored text the parser refuses, as a row changed behind the services' back may hold.
BROKEN = "price <= AND lot"


def test_set_aside_orders_show_their_reason_and_the_others_null():
    market = pencils_market()
    seller, alice = UserFactory(username="seller"), UserFactory(username="alice")
    good_offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
    )
    bad_offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 50 AND price >= 1.00"
    )
    good_bid = bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 2.00")
    bad_bid = bid_place(buyer=alice, market=market, constraint="lot = 20 AND price <= 2.00")
    Offer.objects.filter(pk=bad_offer.pk).update(constraint_text=BROKEN)
    Bid.objects.filter(pk=bad_bid.pk).update(constraint_text=BROKEN)
    matching_cycle_run()
    bad_offer.refresh_from_db()
    bad_bid.refresh_from_db()
    assert bad_offer.set_aside_reason.startswith("its stored constraint does not parse: ")
    assert bad_bid.set_aside_reason.startswith("its stored constraint does not parse: ")
    anonymous, owner = client_for(None), client_for(alice)

    def reason(client, path):
        response = client.get(path)
        assert response.status_code == 200
        return response.json()["set_aside_reason"]

    assert reason(anonymous, f"/api/v1/offers/{bad_offer.pk}/") == bad_offer.set_aside_reason
    assert reason(anonymous, f"/api/v1/offers/{good_offer.pk}/") is None
    assert reason(owner, f"/api/v1/bids/{bad_bid.pk}/") == bad_bid.set_aside_reason
    assert reason(owner, f"/api/v1/bids/{good_bid.pk}/") is None
    listed = {b["id"]: b["set_aside_reason"] for b in owner.get("/api/v1/bids/").json()["results"]}
    assert listed == {good_bid.pk: None, bad_bid.pk: bad_bid.set_aside_reason}
