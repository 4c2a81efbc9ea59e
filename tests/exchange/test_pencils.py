"""The pencils example end to end through the services (SPEC 5), for both pricing rules."""

from __future__ import annotations

from decimal import Decimal

import pytest

from exchange.errors import StaleVersion
from exchange.models import BestOffer, Bid, Notification, Offer, OfferBidMatch, Trade
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_amend, bid_place, bid_withdraw, offer_publish
from exchange.services.verification import best_offers_verify
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("strategy")]


def best(offer):
    row = BestOffer.objects.get(offer=offer)
    return row.bid_id, row.value, row.matching_bids


def notes_since(last_id):
    return sorted(
        (n.recipient.username if n.recipient else "market", n.type, n.offer_id)
        for n in Notification.objects.filter(id__gt=last_id).select_related("recipient")
    )


def last_note_id():
    last = Notification.objects.order_by("-id").first()
    return last.id if last else 0


@pytest.mark.parametrize(
    "pricing, price", [("first", Decimal("1.25")), ("second", Decimal("1.21"))]
)
def test_pencils_auction_from_offer_to_trade(pricing, price):
    # Given a pencils market, two sellers and three buyers
    market = pencils_market(pricing=pricing)
    seller, seller2 = UserFactory(username="seller"), UserFactory(username="seller2")
    alice, bob, carol = (UserFactory(username=n) for n in ("alice", "bob", "carol"))
    offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1000 AND 10000 AND price >= 0.90"
    )
    other = offer_publish(
        seller=seller2, market=market, constraint="lot BETWEEN 2000 AND 3000 AND price >= 1.00"
    )
    matching_cycle_run()
    assert best(offer) == (None, None, 0)

    # When alice bids, she is best on both offers
    mark = last_note_id()
    a = bid_place(buyer=alice, market=market, constraint="lot IN [2000, 5000] AND price <= 1.10")
    matching_cycle_run()
    assert best(offer) == (a.pk, Decimal("1.10"), 1)
    assert best(other) == (a.pk, Decimal("1.10"), 1)
    assert notes_since(mark) == sorted(
        [
            ("market", "best_offer", offer.pk),
            ("seller", "best_offer", offer.pk),
            ("alice", "best_bid", offer.pk),
            ("market", "best_offer", other.pk),
            ("seller2", "best_offer", other.pk),
            ("alice", "best_bid", other.pk),
        ]
    )

    # When bob bids higher, he takes the top place on both and alice hears she is outbid
    mark = last_note_id()
    b = bid_place(
        buyer=bob, market=market, constraint="lot BETWEEN 3000 AND 4000 AND price <= 1.20"
    )
    matching_cycle_run()
    assert best(offer) == (b.pk, Decimal("1.20"), 2)
    assert best(other) == (b.pk, Decimal("1.20"), 2)
    assert notes_since(mark) == sorted(
        [
            ("market", "best_offer", offer.pk),
            ("seller", "best_offer", offer.pk),
            ("bob", "best_bid", offer.pk),
            ("alice", "outbid", offer.pk),
            ("market", "best_offer", other.pk),
            ("seller2", "best_offer", other.pk),
            ("bob", "best_bid", other.pk),
            ("alice", "outbid", other.pk),
        ]
    )

    # A bid that matches nothing changes nothing but its own existence
    mark = last_note_id()
    c = bid_place(buyer=carol, market=market, constraint="lot <= 500 AND price <= 2.00")
    matching_cycle_run()
    assert best(offer) == (b.pk, Decimal("1.20"), 2)
    assert notes_since(mark) == []

    # Amending with a stale version is refused and changes nothing
    with pytest.raises(StaleVersion):
        bid_amend(
            buyer=alice, bid_id=a.pk, constraint="lot IN [2000, 5000] AND price <= 9.99", version=7
        )
    assert Bid.objects.get(pk=a.pk).constraint_text == "lot BETWEEN 2000 AND 5000 AND price <= 1.10"

    # Alice amends to 1.25 and is best again; price < 1.26 on tick 0.01 means <= 1.25
    a = bid_amend(
        buyer=alice, bid_id=a.pk, constraint="lot IN [2000, 5000] AND price < 1.26", version=1
    )
    assert (a.version, a.constraint_text) == (2, "lot BETWEEN 2000 AND 5000 AND price <= 1.25")
    matching_cycle_run()
    assert best(offer) == (a.pk, Decimal("1.25"), 2)
    bid_withdraw(buyer=carol, bid_id=c.pk)
    matching_cycle_run()
    assert best(offer) == (a.pk, Decimal("1.25"), 2)
    assert best_offers_verify().clean

    # When staff close the first offer
    mark = last_note_id()
    result = offer_close(offer_id=offer.pk, staff=StaffFactory())

    # Then alice buys at the pricing rule's price, for the largest lot both accept
    trade = result.trade
    assert result.state == "closed"
    assert (trade.bid_id, trade.buyer.username, trade.seller.username) == (a.pk, "alice", "seller")
    assert trade.price == price
    assert trade.quantity == Decimal(5000)
    assert trade.agreed_constraint == (
        "subject = 'office.supplies.pencils' AND lot BETWEEN 2000 AND 5000 "
        "AND price BETWEEN 0.90 AND 1.25"
    )
    assert Bid.objects.get(pk=a.pk).state == "filled"
    assert not BestOffer.objects.filter(offer=offer).exists()
    # and alice's filled bid leaves the other offer, where bob is best again
    assert best(other) == (b.pk, Decimal("1.20"), 1)
    assert not OfferBidMatch.objects.filter(bid_id=a.pk).exists()
    assert ("bob", "best_bid", other.pk) in notes_since(mark)
    assert {
        ("alice", "trade", offer.pk),
        ("seller", "trade", offer.pk),
        ("market", "trade", offer.pk),
    } <= set(notes_since(mark))
    assert best_offers_verify().clean

    # Closing twice returns the first result and changes nothing
    again = offer_close(offer_id=offer.pk, staff=StaffFactory())
    assert again.trade.pk == trade.pk
    assert Trade.objects.count() == 1


def test_offer_without_matching_bid_closes_unsold():
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 1000 AND price >= 2.00"
    )
    bid_place(buyer=UserFactory(), market=market, constraint="lot = 1000 AND price <= 1.00")
    matching_cycle_run()
    result = offer_close(offer_id=offer.pk, staff=StaffFactory())
    assert (result.state, result.trade) == ("closed", None)
    assert Offer.objects.get(pk=offer.pk).state == "closed"
    assert Trade.objects.count() == 0


def test_closing_takes_in_pending_changes_first():
    # Given a bid committed but not yet matched by a cycle
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 1000 AND price >= 1.00"
    )
    bid = bid_place(buyer=UserFactory(), market=market, constraint="lot = * AND price <= 1.50")
    # When staff close the offer right away, the bid still wins: it was best at that moment
    result = offer_close(offer_id=offer.pk, staff=StaffFactory())
    assert result.trade.bid_id == bid.pk
    assert result.trade.price == Decimal("1.50")
    assert result.trade.quantity == Decimal(1000)


def test_ties_go_to_the_earlier_bid():
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 1000 AND price >= 1.00"
    )
    first = bid_place(buyer=UserFactory(), market=market, constraint="price <= 1.50")
    bid_place(buyer=UserFactory(), market=market, constraint="price <= 1.50")
    matching_cycle_run()
    assert best(offer) == (first.pk, Decimal("1.50"), 2)
