"""The continuous matching transaction on a real Celery worker and Redis (SPEC 5.4)."""

from __future__ import annotations

import time
from decimal import Decimal
from unittest import mock

import pytest
from django.conf import settings
from django.db import transaction

from exchange import tasks
from exchange.models import BestOffer, Bid, MatchingCycle, Notification, OrderChange
from exchange.redis_clients import redis_client
from exchange.services.orders import bid_place, offer_publish
from exchange.tasks import _pending_key
from tests.factories import UserFactory, pencils_market

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def wait_for(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def outbox(offer):
    """The matching cycle's outbox rows for an offer (not the posting's own ``offer`` event)."""
    return sorted(
        (n.recipient.username if n.recipient else "market", n.type)
        for n in Notification.objects.filter(offer=offer)
        .exclude(type="offer")
        .select_related("recipient")
    )


def test_a_committed_bid_reaches_the_best_offer_table_through_the_worker(live_stack):
    # Given an open offer, matched by the worker
    market = pencils_market()
    seller, alice, bob = (UserFactory(username=n) for n in ("seller", "alice", "bob"))
    offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
    )
    wait_for(
        lambda: not OrderChange.objects.filter(processed_at=None).exists(), "the offer's cycle"
    )

    # When alice's bid commits, the worker makes her best and writes exactly these outbox rows
    a = bid_place(buyer=alice, market=market, constraint="lot = 50 AND price <= 1.20")
    row = wait_for(lambda: BestOffer.objects.filter(offer=offer, bid=a).first(), "alice to be best")
    assert (row.value, row.matching_bids) == (Decimal("1.20"), 1)
    assert outbox(offer) == [
        ("alice", "best_bid"),
        ("market", "best_offer"),
        ("seller", "best_offer"),
    ]

    # When bob outbids her, the previous best bidder is told too
    b = bid_place(buyer=bob, market=market, constraint="lot = 60 AND price <= 1.30")
    wait_for(lambda: BestOffer.objects.filter(offer=offer, bid=b).exists(), "bob to be best")
    assert outbox(offer) == sorted(
        [
            ("alice", "best_bid"),
            ("market", "best_offer"),
            ("seller", "best_offer"),
            ("bob", "best_bid"),
            ("alice", "outbid"),
            ("market", "best_offer"),
            ("seller", "best_offer"),
        ]
    )
    # and every notification is pushed and marked delivered after commit
    wait_for(lambda: not Notification.objects.filter(delivered_at=None).exists(), "delivery")
    assert MatchingCycle.objects.filter(strategy="range").exists()


def test_nothing_is_enqueued_for_a_rolled_back_transaction(live_stack):
    market = pencils_market()
    buyer = UserFactory(username="dora")
    sent = []
    real = tasks.request_once

    def spy(*args, **kwargs):
        queued = real(*args, **kwargs)
        if queued:
            sent.append(args)
        return queued

    with mock.patch.object(tasks, "request_once", side_effect=spy):
        with pytest.raises(RuntimeError), transaction.atomic():
            bid_place(buyer=buyer, market=market, constraint="lot = 5 AND price <= 1.00")
            raise RuntimeError("the request fails after the bid was written")
        assert sent == []
        assert not Bid.objects.exists() and not OrderChange.objects.exists()

        # while a committed one is enqueued exactly once (no cycle of an earlier test is
        # still waiting to start: that one would take this change)
        count = settings.MATCHING_PARTITIONS
        redis_client().delete(*(_pending_key(p, count) for p in range(count)))
        bid_place(buyer=buyer, market=market, constraint="lot = 5 AND price <= 1.00")
        assert len(sent) == 1
