"""The whole story told at closing (issue 39, item 2): every bid that matched the auction
hears how it ended (the winner "won", the others "did not win" with the winning price), in
the outbox and so over the live channels, and each bid's outcome is recorded."""

from __future__ import annotations

from decimal import Decimal

import pytest

from exchange.models import BidOutcome, Notification
from exchange.notification_texts import note_text
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db


def test_winner_and_every_loser_hear_the_outcome():
    market = pencils_market()
    seller = UserFactory(username="sam")
    alice, bob, carol = (UserFactory(username=n) for n in ("alice", "bob", "carol"))
    offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 100 AND 5000 AND price >= 1.00"
    )
    a = bid_place(buyer=alice, market=market, constraint="lot = 500 AND price <= 1.20").pk
    a2 = bid_place(buyer=alice, market=market, constraint="lot = 400 AND price <= 1.10").pk
    b = bid_place(buyer=bob, market=market, constraint="lot = 500 AND price <= 1.15").pk
    # carol's bid does not match the offer (the lot is too large): she hears nothing
    bid_place(buyer=carol, market=market, constraint="lot = 9000 AND price <= 1.30")
    matching_cycle_run()
    mark = Notification.objects.order_by("-id").first().pk

    offer_close(offer_id=offer.pk, staff=StaffFactory())

    rows = sorted(
        (n.recipient.username, n.type, note_text(n.type, n.data)[0])
        for n in Notification.objects.filter(id__gt=mark, recipient__isnull=False)
    )
    o = offer.pk
    assert rows == [
        (
            "alice",
            "offer_ended",
            f"Auction ended: offer #{o} went to your bid #{a} at 1.20 EUR; bid #{a2} did not win.",
        ),
        (
            "alice",
            "trade",
            f"Won: bid #{a} won the auction of offer #{o}, 500 pencils at 1.20 EUR, "
            "600.00 EUR in all.",
        ),
        (
            "bob",
            "offer_ended",
            f"Auction ended, you did not win: offer #{o} went to another bid at 1.20 EUR "
            f"(bid #{b}).",
        ),
        ("sam", "trade", f"Sold: offer #{o} to alice, 500 pencils at 1.20 EUR, 600.00 EUR in all."),
    ]
    # pushed like every outbox row (after commit: the test's transaction never commits, so
    # they wait for the sweep; undelivered rows are what it sends)
    assert Notification.objects.filter(id__gt=mark, delivered_at=None).count() == len(rows) + 2
    outcomes = sorted(
        (o.bid_id, o.result, o.price, o.value) for o in BidOutcome.objects.filter(offer=offer)
    )
    assert outcomes == [
        (a, "won", Decimal("1.2"), Decimal("1.2")),
        (a2, "lost", Decimal("1.2"), Decimal("1.1")),
        (b, "lost", Decimal("1.2"), Decimal("1.15")),
    ]
    bob_row = Notification.objects.get(recipient__username="bob", id__gt=mark)
    assert bob_row.data == {
        "offer": o,
        "market": "office.supplies.pencils",
        "state": "closed",
        "sold": True,
        "price": "1.20",
        "pricing": "first",
        "unit": "EUR",
        "quantity_unit": "pencils",
        "bid": b,
        "status": "lost",
        "own": False,
        "winning_bid": a,
    }


def test_closing_twice_tells_nobody_twice():
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot <= 5000 AND price >= 1.00"
    )
    bid_place(buyer=UserFactory(), market=market, constraint="lot = 500 AND price <= 1.20")
    bid_place(buyer=UserFactory(), market=market, constraint="lot = 500 AND price <= 1.10")
    matching_cycle_run()
    staff = StaffFactory()
    offer_close(offer_id=offer.pk, staff=staff)
    count = (Notification.objects.count(), BidOutcome.objects.count())
    offer_close(offer_id=offer.pk, staff=staff)
    assert (
        (Notification.objects.count(), BidOutcome.objects.count())
        == count
        == (
            count[0],
            2,
        )
    )


def test_every_outcome_has_its_own_sentence(settings):
    """``note_text`` (what the pages show and the ``me`` frames carry) for each outcome row:
    lost to one's own bid, over the limit (sold and unsold), and the winner's."""
    settings.SPENDING_LIMIT_DEFAULT = Decimal("1000")
    market = pencils_market()
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    # bob's bid has no upper lot (placed before any offer: it commits nothing)
    unbounded = bid_place(buyer=bob, market=market, constraint="price <= 1.30")
    won = bid_place(buyer=alice, market=market, constraint="lot = 500 AND price <= 1.20")
    lost = bid_place(buyer=alice, market=market, constraint="lot = 300 AND price <= 1.10")
    staff = StaffFactory()
    sold = offer_publish(
        seller=UserFactory(), market=market, constraint="lot BETWEEN 100 AND 5000 AND price >= 1.00"
    )
    matching_cycle_run()
    offer_close(offer_id=sold.pk, staff=staff)
    # only bob's bid matches this one (alice's 300 is too small): unsold
    unsold = offer_publish(
        seller=UserFactory(),
        market=market,
        constraint="lot BETWEEN 1000 AND 5000 AND price >= 1.00",
    )
    matching_cycle_run()
    offer_close(offer_id=unsold.pk, staff=staff)
    rows = [
        [n.type, n.data]
        for n in Notification.objects.filter(
            recipient__isnull=False, type__in=["offer_ended", "trade"]
        )
    ]
    statuses = sorted(d.get("status", "trade") for _, d in rows)
    assert statuses == ["lost", "over_limit", "over_limit", "trade", "trade"]
    over = "would have cost 6,500.00 EUR, more than the 1,000.00 EUR left of your spending limit"
    assert [note_text(k, d) for k, d in rows] == [
        (f"Sold: offer #{sold.pk} to alice, 500 pencils at 1.20 EUR, 600.00 EUR in all.", "good"),
        (
            f"Won: bid #{won.pk} won the auction of offer #{sold.pk}, 500 pencils at 1.20 EUR, "
            "600.00 EUR in all.",
            "good",
        ),
        (
            f"Auction ended, you did not win offer #{sold.pk}: bid #{unbounded.pk} {over}; it "
            "went to another bid at 1.20 EUR.",
            "bad",
        ),
        (
            f"Auction ended: offer #{sold.pk} went to your bid #{won.pk} at 1.20 EUR; "
            f"bid #{lost.pk} did not win.",
            "info",
        ),
        (
            f"Auction ended, you did not win offer #{unsold.pk}: bid #{unbounded.pk} {over}; it "
            "closed unsold.",
            "bad",
        ),
    ]
    assert BidOutcome.objects.filter(bid=unbounded, result="over_limit").count() == 2
