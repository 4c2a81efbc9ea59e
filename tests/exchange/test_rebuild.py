"""``manage.py engine_rebuild``: the store, the matches and the best-offer table from scratch."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from exchange import engine
from exchange.models import BestOffer, OfferBidMatch
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, bid_withdraw, offer_publish
from exchange.services.verification import best_offers_verify
from tests.factories import UserFactory, pencils_market

pytestmark = [pytest.mark.django_db(transaction=False), pytest.mark.usefixtures("strategy")]


def book():
    market = pencils_market()
    seller, buyer = UserFactory(), UserFactory()
    offers = [
        offer_publish(
            seller=seller,
            market=market,
            constraint=f"lot BETWEEN {a} AND {a + 9} AND price >= 1.00",
        )
        for a in (1, 11, 21)
    ]
    bids = [
        bid_place(buyer=buyer, market=market, constraint=f"lot = {lot} AND price <= {price}")
        for lot, price in [(5, "1.10"), (5, "1.20"), (15, "1.05"), (40, "2.00")]
    ]
    bid_place(buyer=buyer, market=market, constraint="price <= 0.99")  # below every reserve
    matching_cycle_run()
    bid_withdraw(buyer=buyer, bid_id=bids[1].pk)
    matching_cycle_run()
    return offers, bids


def snapshot():
    return (
        sorted(BestOffer.objects.values_list("offer_id", "bid_id", "value", "matching_bids")),
        sorted(OfferBidMatch.objects.values_list("offer_id", "bid_id", "value")),
    )


def test_rebuild_recomputes_the_same_table_from_an_empty_store(strategy):
    offers, bids = book()
    before = snapshot()
    assert before[0] == [
        (offers[0].pk, bids[0].pk, before[0][0][2], 1),
        (offers[1].pk, bids[2].pk, before[0][1][2], 1),
        (offers[2].pk, None, None, 0),
    ]
    # Lose the store's contents: only the rebuild can bring the matches back.
    store = engine.store()
    store.drop()
    store.create()
    OfferBidMatch.objects.all().delete()
    out = io.StringIO()
    call_command("engine_rebuild", stdout=out)
    assert (
        out.getvalue() == f"engine_{strategy} rebuilt: 3 offer(s) recomputed, 0 notification(s)\n"
    )
    assert snapshot() == before
    assert best_offers_verify().clean


def test_switching_strategy_after_a_rebuild_keeps_the_table(settings, strategy):
    book()
    before = snapshot()
    other = "paper" if strategy == "range" else "range"
    settings.MATCHING_STRATEGY = other
    call_command("engine_rebuild", stdout=io.StringIO())
    assert snapshot() == before
    assert best_offers_verify().clean
    # The next cycle works on the new store.
    market = pencils_market(subject="office.supplies.pens")
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 3 AND price >= 1.00"
    )
    bid = bid_place(buyer=UserFactory(), market=market, constraint="lot = 3 AND price <= 1.50")
    matching_cycle_run()
    assert BestOffer.objects.get(offer=offer).bid_id == bid.pk
    assert best_offers_verify().clean
