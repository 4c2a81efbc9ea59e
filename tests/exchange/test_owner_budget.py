"""One owner's maximum-size orders cannot fill a matching cycle (issue 37): a cycle takes
at most ``OWNER_CYCLE_ALTERNATIVES`` alternatives of one owner's changes, the rest wait
for the next cycles, everyone else's changes go in beside them, and the book ends exactly
where taking everything at once would have put it."""

from __future__ import annotations

from decimal import Decimal

import pytest

from exchange import models
from exchange.services import matching as cycle
from exchange.services.matching import OWNER_CYCLE_ALTERNATIVES, matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from exchange.services.verification import best_offers_verify
from tests.factories import UserFactory, pencils_market

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("strategy")]


@pytest.fixture(autouse=True)
def room_to_spend(settings):
    """Limits large enough for twenty of the widest bids (each could cost about 6,300)."""
    settings.SPENDING_LIMIT_DEFAULT = Decimal(10**9)


def widest(i: int) -> str:
    """A bid of 64 alternatives, the most one constraint may have."""
    return " OR ".join(
        f"lot IN [{1000 + 50 * j}, {1040 + 50 * j}] AND price <= {1 + (i + j) % 50 / 100:.2f}"
        for j in range(64)
    )


def test_a_flood_of_the_widest_bids_is_taken_a_budget_a_cycle():
    # Given an offer, then heavy's 20 widest bids (1,280 alternatives) and, after them, one
    # small bid of light's
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(username="seller"),
        market=market,
        constraint="lot IN [1000, 5000] AND price >= 1.00",
    )
    matching_cycle_run()
    heavy, light = UserFactory(username="heavy"), UserFactory(username="light")
    floods = [bid_place(buyer=heavy, market=market, constraint=widest(i)) for i in range(20)]
    small = bid_place(buyer=light, market=market, constraint="lot = 2000 AND price <= 1.30")
    assert OWNER_CYCLE_ALTERNATIVES == 512

    # When one cycle runs
    first = matching_cycle_run()

    # Then it took heavy's first 8 bids (8 x 64 = 512 alternatives) and light's bid
    assert (first.changes, first.more) == (9, True)
    taken = set(models.OfferBidMatch.objects.values_list("bid_id", flat=True))
    assert taken == {b.pk for b in floods[:8]} | {small.pk}
    pending = models.OrderChange.objects.filter(processed_at=None)
    assert sorted(pending.values_list("order_id", flat=True)) == [b.pk for b in floods[8:]]

    # When cycles run until none is pending, then the rest go 8 a cycle
    reports = []
    while (report := matching_cycle_run()).changes:
        reports.append((report.changes, report.more))
    assert reports == [(8, True), (4, False)]
    # and the book is exactly what one pass over everything gives
    assert models.OfferBidMatch.objects.filter(offer=offer).count() == 21
    assert best_offers_verify().clean


def test_each_owner_gets_its_first_change_whatever_its_size(monkeypatch):
    # Given a budget smaller than one order
    monkeypatch.setattr(cycle, "OWNER_CYCLE_ALTERNATIVES", 10)
    market = pencils_market()
    buyers = [UserFactory(username=f"b{i}") for i in range(3)]
    bids = [bid_place(buyer=b, market=market, constraint=widest(i)) for i, b in enumerate(buyers)]
    bids += [bid_place(buyer=buyers[0], market=market, constraint="price <= 1.10")]

    # Then a cycle still takes one change of each owner, and the next one the last
    assert (matching_cycle_run().changes, matching_cycle_run().changes) == (3, 1)
    assert models.OrderChange.objects.filter(processed_at=None).count() == 0
