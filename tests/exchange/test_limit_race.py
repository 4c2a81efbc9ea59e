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
from exchange.tasks import matching_cycle
from tests.exchange.test_lock_order import idle_in_transaction, started, waits, watcher
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["watcher"]  # the fixture, imported for these tests


@pytest.fixture(autouse=True)
def _limits(settings):
    settings.SPENDING_LIMIT_DEFAULT = Decimal("1000")
    with mock.patch.object(matching_cycle, "apply_async"):
        yield


def held_open(work, release: threading.Event):
    """``work`` in a transaction kept open until ``release``."""

    def run():
        with transaction.atomic():
            result = work()
            release.wait(30)
            return result

    return run


def test_a_second_bid_placed_while_the_first_commits_sees_it(watcher):
    market, buyer = pencils_market(), UserFactory()
    release = threading.Event()
    first = started(
        held_open(
            lambda: bid_place(
                buyer=buyer, market=market, constraint="lot <= 600 AND price <= 1.00"
            ),
            release,
        )
    )
    idle_in_transaction(watcher, first)
    second = started(
        lambda: bid_place(buyer=buyer, market=market, constraint="lot <= 500 AND price <= 1.00")
    )
    waits(watcher, second, "transactionid", "tuple")
    release.set()
    assert first.done().largest_award == Decimal("600.00")
    with pytest.raises(InvalidInput) as caught:
        second.done()
    assert caught.value.as_dict()["code"] == "over_limit"
    assert caught.value.as_dict()["limit"]["committed"] == "600.00"
    assert Bid.objects.filter(buyer=buyer).count() == 1
    assert buyer_committed(buyer_id=buyer.pk) == Decimal("600.00")


def test_an_amend_raised_while_another_bid_commits_sees_it(watcher):
    market, buyer = pencils_market(), UserFactory()
    bid = bid_place(buyer=buyer, market=market, constraint="lot <= 100 AND price <= 1.00")
    release = threading.Event()
    first = started(
        held_open(
            lambda: bid_place(
                buyer=buyer, market=market, constraint="lot <= 800 AND price <= 1.00"
            ),
            release,
        )
    )
    idle_in_transaction(watcher, first)
    raised = started(
        lambda: bid_amend(
            buyer=buyer, bid_id=bid.pk, constraint="lot <= 300 AND price <= 1.00", version=1
        )
    )
    waits(watcher, raised, "transactionid", "tuple")
    release.set()
    first.done()
    with pytest.raises(InvalidInput) as caught:
        raised.done()
    assert caught.value.as_dict()["limit"]["committed"] == "800.00"
    bid.refresh_from_db()
    assert (bid.constraint_text, bid.largest_award) == (
        "lot <= 100 AND price <= 1.00",
        Decimal("100.00"),
    )
    assert buyer_committed(buyer_id=buyer.pk) == Decimal("900.00")
