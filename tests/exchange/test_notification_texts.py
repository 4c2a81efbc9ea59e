"""Every personal notification is true for its recipient and its offer's pricing rule (issue
22, item 2): each kind (best_offer, best_bid, outbid, not_best, offer_ended, trade, offer) x
recipient (seller, new best bidder, bidder who lost the top place, winner, other bidders) x
pricing rule (fixed price, first-price auction, second-price auction) x outcome (a first
bid, a better bid, a withdrawal, an amendment away and back, a sale, a win elsewhere, an
offer withdrawn, cancelled, closed unsold).

The orders go through the real services and the real matching cycle; each step's table row
lists every personal row it wrote, as (recipient, kind, sentence). ``note_text`` gives the
sentence, which the pages show and the ``me`` frames carry (the pages' script only displays it).
"""

from __future__ import annotations

import pytest

from exchange.models import Notification
from exchange.notification_texts import note_text
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import (
    bid_amend,
    bid_place,
    bid_withdraw,
    offer_cancel,
    offer_publish,
    offer_withdraw,
)
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db

# pricing rule -> (market pricing, offer's price predicate for each lot range)
OFFERS = {
    "fixed": (
        "first",
        "(lot BETWEEN {lo} AND {hi} AND price = 1.00) OR (lot BETWEEN {lo} AND {mid} AND price = 1.10)",
    ),
    "first": ("first", "lot BETWEEN {lo} AND {hi} AND price >= 1.00"),
    "second": ("second", "lot BETWEEN {lo} AND {hi} AND price >= 1.00"),
}
# What alice (lot 3,000, up to 1.05) and bob (lot 1,500, up to 1.15) are worth on offer 1:
# a fixed price gives each the price of the tier it reaches; an auction the bid's limit.
VALUES = {"fixed": ("1.00", "1.10"), "first": ("1.05", "1.15"), "second": ("1.05", "1.15")}
# What alice pays for 3,000 pencils when offer 1 closes: the fixed price; the first price
# (her value); the second price (the reserve, as no other bid matches then).
SALE = {"fixed": "1.00", "first": "1.05", "second": "1.00"}
TOTAL = {"1.00": "3,000.00", "1.05": "3,150.00"}


def seller_best(pricing: str, offer: int, value: str, count: int) -> str:
    bids = "1 matching bid" if count == 1 else f"{count} matching bids"
    if pricing == "fixed":
        return f"A bid is first in line for offer #{offer} at {value} EUR ({bids})."
    tail = (
        "; the winner pays the second-best value plus a tick, at most that"
        if pricing == "second"
        else ""
    )
    return f"Best bid on offer #{offer} is now {value} EUR ({bids}){tail}."


def bidder_best(pricing: str, bid: int, offer: int, value: str) -> str:
    if pricing == "fixed":
        return f"Bid #{bid} is first in line for offer #{offer} at {value} EUR."
    if pricing == "second":
        return (
            f"Bid #{bid} is now the best bid on offer #{offer}; if it wins it pays the "
            f"second-best value plus a tick, at most {value} EUR."
        )
    return f"Bid #{bid} is now the best bid on offer #{offer} at {value} EUR."


class Book:
    """Collects the personal rows each step writes."""

    def __init__(self) -> None:
        self.mark = self._last()

    @staticmethod
    def _last() -> int:
        last = Notification.objects.order_by("-id").first()
        return last.id if last else 0

    def step(self) -> list[tuple[str, str, str]]:
        """The personal rows since the last step, as (recipient, kind, sentence), sorted."""
        matching_cycle_run()
        rows = []
        for note in Notification.objects.filter(
            id__gt=self.mark, recipient__isnull=False
        ).select_related("recipient"):
            rows.append((note.recipient.username, note.type, note_text(note.type, note.data)[0]))
        self.mark = self._last()
        return sorted(rows)


@pytest.mark.parametrize("pricing", ["fixed", "first", "second"])
def test_every_personal_sentence_is_true_for_its_recipient(pricing):
    market_pricing, template = OFFERS[pricing]
    market = pencils_market(pricing=market_pricing)
    sellers = [UserFactory(username=f"seller{i}") for i in (1, 2, 3, 4)]
    alice, bob, carol, dave = (UserFactory(username=n) for n in ("alice", "bob", "carol", "dave"))
    staff = StaffFactory(username="staff")

    def publish(seller, lo: int, hi: int) -> int:
        text = template.format(lo=lo, hi=hi, mid=(lo + hi) // 2 - 1000)
        return offer_publish(seller=seller, market=market, constraint=text).pk

    book = Book()
    o1 = publish(sellers[0], 1000, 5000)
    assert book.step() == []  # no bid yet: nothing personal
    low, high = VALUES[pricing]

    # A first bid: the seller and the new best bidder
    a = bid_place(buyer=alice, market=market, constraint="lot = 3000 AND price <= 1.05").pk
    assert book.step() == sorted(
        [
            ("alice", "best_bid", bidder_best(pricing, a, o1, low)),
            ("seller1", "best_offer", seller_best(pricing, o1, low, 1)),
        ]
    )

    # A better bid: "outbid" only where bidding more is how it happened (an auction); at a
    # fixed price the other bid reaches a dearer tier and is ahead
    b = bid_place(buyer=bob, market=market, constraint="lot = 1500 AND price <= 1.15").pk
    lost = (
        (
            "alice",
            "not_best",
            f"Bid #{a} is no longer first in line for offer #{o1}: another bid is ahead at {high} EUR.",
        )
        if pricing == "fixed"
        else (
            "alice",
            "outbid",
            f"Bid #{a} was outbid on offer #{o1}: the best bid is now {high} EUR.",
        )
    )
    assert book.step() == sorted(
        [
            ("bob", "best_bid", bidder_best(pricing, b, o1, high)),
            lost,
            ("seller1", "best_offer", seller_best(pricing, o1, high, 2)),
        ]
    )

    # The best bidder withdraws: nothing to him (he did it); alice is best again
    bid_withdraw(buyer=bob, bid_id=b)
    assert book.step() == sorted(
        [
            ("alice", "best_bid", bidder_best(pricing, a, o1, low)),
            ("seller1", "best_offer", seller_best(pricing, o1, low, 1)),
        ]
    )

    # Alice amends her bid away from the offer, and back
    bid_amend(buyer=alice, bid_id=a, constraint="lot = 9000 AND price <= 1.05", version=1)
    assert book.step() == [
        ("alice", "not_best", f"Bid #{a} no longer matches offer #{o1}."),
        ("seller1", "best_offer", f"No bid matches offer #{o1} any more."),
    ]
    bid_amend(buyer=alice, bid_id=a, constraint="lot = 3000 AND price <= 1.05", version=2)
    assert book.step() == sorted(
        [
            ("alice", "best_bid", bidder_best(pricing, a, o1, low)),
            ("seller1", "best_offer", seller_best(pricing, o1, low, 1)),
        ]
    )

    # A second offer alice is best on too
    o2 = publish(sellers[1], 1000, 5000)
    assert book.step() == sorted(
        [
            ("alice", "best_bid", bidder_best(pricing, a, o2, low)),
            ("seller2", "best_offer", seller_best(pricing, o2, low, 1)),
        ]
    )

    # Offer 1 closes to alice: the parties hear of the trade (the seller not that "no bid
    # matches"); on offer 2 alice's bid left because it won, so she is not "outbid" there
    offer_close(offer_id=o1, staff=staff)
    price = SALE[pricing]
    terms = f"3,000 pencils at {price} EUR, {TOTAL[price]} EUR in all"
    won = (
        f"Bought: bid #{a} filled by offer #{o1}, {terms}."
        if pricing == "fixed"
        else f"Won: bid #{a} won the auction of offer #{o1}, {terms}."
    )
    assert book.step() == sorted(
        [
            ("alice", "trade", won),
            ("seller1", "trade", f"Sold: offer #{o1} to alice, {terms}."),
            ("seller2", "best_offer", f"No bid matches offer #{o2} any more."),
        ]
    )

    # Offer 2 is withdrawn by its seller while carol is best on it
    c = bid_place(buyer=carol, market=market, constraint="lot = 2000 AND price <= 1.05").pk
    assert book.step() == sorted(
        [
            ("carol", "best_bid", bidder_best(pricing, c, o2, low)),
            ("seller2", "best_offer", seller_best(pricing, o2, low, 1)),
        ]
    )
    offer_withdraw(seller=sellers[1], offer_id=o2)
    assert book.step() == [
        (
            "carol",
            "offer_ended",
            f"Offer #{o2} was withdrawn by its seller: bid #{c} no longer matches it.",
        ),
    ]

    # Offer 3 is cancelled by staff while dave is best on it: both hear it
    o3 = publish(sellers[2], 20000, 30000)
    d = bid_place(buyer=dave, market=market, constraint="lot = 25000 AND price <= 1.05").pk
    book.step()
    offer_cancel(staff=staff, offer_id=o3)
    assert book.step() == sorted(
        [
            (
                "dave",
                "offer_ended",
                f"Offer #{o3} was cancelled by staff: bid #{d} no longer matches it.",
            ),
            ("seller3", "offer", f"Offer #{o3} was cancelled by staff."),
        ]
    )

    # Offer 4 closes with no bid
    o4 = publish(sellers[3], 50000, 60000)
    book.step()
    offer_close(offer_id=o4, staff=staff)
    assert book.step() == [("seller4", "offer", f"Offer #{o4} closed unsold.")]
