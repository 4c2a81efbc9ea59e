"""A market's counts of open offers and active bids are maintained by triggers on the order
tables (``MarketOrderCount``) and read without counting the orders: they equal the counts
after every kind of change, and compaction folds them into one row per market without
changing them."""

from __future__ import annotations

import pytest

from exchange.models import Bid, MarketOrderCount, Offer
from exchange.selectors.markets import market_list
from exchange.services.market_counts import market_counts_compact
from exchange.services.orders import (
    bid_amend,
    bid_place,
    bid_withdraw,
    offer_publish,
    offer_withdraw,
)
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db


def listed() -> dict[str, tuple[int, int]]:
    return {m.subject: (m.open_offers, m.active_bids) for m in market_list()}


def counted() -> dict[str, tuple[int, int]]:
    """The counts the slow way, for comparison."""
    out = {}
    for m in market_list():
        offers = Offer.objects.filter(market=m, state=Offer.State.OPEN).count()
        out[m.subject] = (offers, Bid.objects.filter(market=m, state=Bid.State.ACTIVE).count())
    return out


def test_counts_follow_placements_amendments_and_withdrawals_and_survive_compaction():
    pencils, pens = pencils_market(), pencils_market(subject="office.supplies.pens")
    seller, buyer = UserFactory(), UserFactory()
    assert listed() == {"office.supplies.pencils": (0, 0), "office.supplies.pens": (0, 0)}

    offer = offer_publish(seller=seller, market=pencils, constraint="lot >= 1 AND price >= 1.00")
    offer_publish(seller=seller, market=pens, constraint="lot >= 1 AND price >= 1.00")
    bids = [
        bid_place(buyer=buyer, market=pencils, constraint=f"lot = {i} AND price <= 1.10")
        for i in range(1, 4)
    ]
    assert (
        listed()
        == counted()
        == {
            "office.supplies.pencils": (1, 3),
            "office.supplies.pens": (1, 0),
        }
    )

    # An amendment keeps the bid active: no count changes.
    bid_amend(buyer=buyer, bid_id=bids[0].pk, constraint="lot = 9 AND price <= 1.20", version=1)
    bid_withdraw(buyer=buyer, bid_id=bids[1].pk)
    offer_withdraw(seller=seller, offer_id=offer.pk)
    assert (
        listed()
        == counted()
        == {
            "office.supplies.pencils": (0, 2),
            "office.supplies.pens": (1, 0),
        }
    )
    assert MarketOrderCount.objects.count() == 7  # one row per order entering or leaving

    assert market_counts_compact() == 7
    assert MarketOrderCount.objects.count() == 2
    assert listed() == counted()
    # Compacting again folds the two rows into themselves.
    assert market_counts_compact() == 2
    assert listed() == counted()
