"""Two bids of one buyer placed at the same moment are checked one after the other against
its spending limit: the second sees what the first committed (SPEC 5.2, issue 39 item 1).

The buyer's row lock serializes the checks; the commitments must then be read by a statement
that starts after the lock is granted, since a statement reads the database as it was when
it began, and a check that waited for the lock inside the same statement would add up the
buyer's bids without the one it waited for."""

from __future__ import annotations

import threading
from decimal import Decimal
from unittest import mock

import pytest
from django.db import transaction

from exchange.errors import InvalidInput
from exchange.models import Bid
from exchange.selectors.limits import buyer_committed
from exchange.services.orders import bid_amend, bid_place
from tests.exchange.test_lock_order import idle_in_transaction, started, waits, watcher
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["watcher"]  # the fixture, imported for these tests


@pytest.fixture(autouse=True)
def _limits(settings):
    settings.SPENDING_LIMIT_DEFAULT = Decimal("1000")
    with mock.patch("exchange.services.orders.matching_cycle_request"):
        yield


def refused_while_another_commits(watcher, buyer, market, lot: int, work) -> InvalidInput:
    """Another bid of ``buyer`` for ``lot`` at 1.00 placed and held uncommitted; ``work`` in
    a session of its own until it waits for the buyer's lock; the other bid committed; the
    limit error ``work`` then raised."""
    release = threading.Event()

    def other():
        with transaction.atomic():
            bid = bid_place(
                buyer=buyer, market=market, constraint=f"lot <= {lot} AND price <= 1.00"
            )
            release.wait(30)
            return bid

    first = started(other)
    idle_in_transaction(watcher, first)
    second = started(work)
    waits(watcher, second, "transactionid", "tuple")
    release.set()
    assert first.done().largest_award == Decimal(lot)
    with pytest.raises(InvalidInput) as caught:
        second.done()
    assert caught.value.as_dict()["code"] == "over_limit"
    return caught.value


def test_a_second_bid_placed_while_the_first_commits_sees_it(watcher):
    market, buyer = pencils_market(), UserFactory()
    error = refused_while_another_commits(
        watcher,
        buyer,
        market,
        600,
        lambda: bid_place(buyer=buyer, market=market, constraint="lot <= 500 AND price <= 1.00"),
    )
    assert error.as_dict()["limit"]["committed"] == "600.00"
    assert Bid.objects.filter(buyer=buyer).count() == 1
    assert buyer_committed(buyer_id=buyer.pk) == Decimal("600.00")


def test_an_amend_raised_while_another_bid_commits_sees_it(watcher):
    market, buyer = pencils_market(), UserFactory()
    bid = bid_place(buyer=buyer, market=market, constraint="lot <= 100 AND price <= 1.00")
    error = refused_while_another_commits(
        watcher,
        buyer,
        market,
        800,
        lambda: bid_amend(
            buyer=buyer, bid_id=bid.pk, constraint="lot <= 300 AND price <= 1.00", version=1
        ),
    )
    assert error.as_dict()["limit"]["committed"] == "800.00"
    bid.refresh_from_db()
    assert (bid.constraint_text, bid.largest_award) == (
        "lot <= 100 AND price <= 1.00",
        Decimal("100.00"),
    )
    assert buyer_committed(buyer_id=buyer.pk) == Decimal("900.00")
