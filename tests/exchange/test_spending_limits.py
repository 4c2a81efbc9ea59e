"""Spending limits (issue 39, item 1): a bid that could cost more than its buyer's remaining
limit is refused on placing and on amending, with the numbers, and changes nothing; closing
passes over a bid whose award would go past its buyer's limit, and the next bid wins."""

from __future__ import annotations

import io
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from exchange.errors import InvalidInput
from exchange.models import (
    BestOffer,
    Bid,
    BidOutcome,
    Notification,
    Offer,
    OrderChange,
    SpendingLimit,
    Trade,
)
from exchange.notification_texts import note_text
from exchange.selectors.limits import buyer_committed, buyer_limit
from exchange.services.closing import offer_close, offer_close_previews
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_amend, bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db


@pytest.fixture
def limit_1000(settings):
    settings.SPENDING_LIMIT_DEFAULT = Decimal("1000")


def refused(**kwargs) -> InvalidInput:
    before = (Bid.objects.count(), OrderChange.objects.count())
    with pytest.raises(InvalidInput) as caught:
        if "bid_id" in kwargs:
            bid_amend(**kwargs)
        else:
            bid_place(**kwargs)
    assert (Bid.objects.count(), OrderChange.objects.count()) == before
    return caught.value


def test_a_bid_within_the_limit_commits_its_largest_award(limit_1000):
    market, buyer = pencils_market(), UserFactory()
    bid = bid_place(buyer=buyer, market=market, constraint="lot <= 800 AND price <= 1.25")
    assert bid.largest_award == Decimal("1000.00")
    assert (buyer_limit(buyer_id=buyer.pk), buyer_committed(buyer_id=buyer.pk)) == (
        Decimal("1000"),
        Decimal("1000"),
    )


def test_a_bid_past_the_remaining_limit_is_refused_with_the_numbers(limit_1000):
    market, buyer = pencils_market(), UserFactory()
    bid_place(buyer=buyer, market=market, constraint="lot <= 600 AND price <= 1.00")
    error = refused(
        buyer=buyer,
        market=market,
        constraint="(lot <= 100 AND price <= 2.00) OR (lot <= 500 AND price <= 1.00)",
    )
    assert error.as_dict() == {
        "code": "over_limit",
        "message": "Bid refused: it could win 500 at 1.00, 500.00 in all, but 400.00 is left "
        "of your spending limit of 1,000.00 (your other active bids could cost 600.00). Lower "
        "its price or give it an upper quantity of at most 400.",
        "field": "constraint",
        "limit": {
            "limit": "1000.00",
            "committed": "600.00",
            "remaining": "400.00",
            "largest_award": "500.00",
            "largest_lot": "500",
            "price": "1.00",
        },
    }


def test_without_an_upper_quantity_the_largest_lot_of_a_matching_offer_counts(limit_1000):
    """The issue's story: a bid at 0.92 with no upper lot would have won 600,000 pencils."""
    market, buyer, seller = pencils_market(), UserFactory(), UserFactory()
    offer_publish(seller=seller, market=market, constraint="lot <= 600000 AND price >= 0.90")
    # an offer the bid cannot match (its reserve is above the bid) does not count
    offer_publish(seller=seller, market=market, constraint="lot <= 9000000 AND price >= 0.95")
    error = refused(buyer=buyer, market=market, constraint="price <= 0.92")
    assert error.message == (
        "Bid refused: it could win 600,000 at 0.92, 552,000.00 in all, but 1,000.00 is left "
        "of your spending limit of 1,000.00 (your other active bids could cost 0.00). Lower "
        "its price or give it an upper quantity of at most 1,086."
    )
    assert error.extra == {
        "limit": {
            "limit": "1000.00",
            "committed": "0.00",
            "remaining": "1000.00",
            "largest_award": "552000.00",
            "largest_lot": "600000",
            "price": "0.92",
        }
    }
    # with an upper quantity that fits, it is accepted
    bid = bid_place(buyer=buyer, market=market, constraint="lot <= 1086 AND price <= 0.92")
    assert bid.largest_award == Decimal("999.12")


def test_a_bid_matching_an_offer_without_an_upper_lot_is_unbounded(limit_1000):
    market, buyer = pencils_market(), UserFactory()
    offer_publish(seller=UserFactory(), market=market, constraint="lot >= 10 AND price >= 0.90")
    error = refused(buyer=buyer, market=market, constraint="price <= 0.92")
    assert error.message == (
        "Bid refused: it has no upper quantity and matches an open offer with none either, "
        "so it could cost any amount; 1,000.00 is left of your spending limit of 1,000.00 "
        "(your other active bids could cost 0.00). Give it an upper quantity of at most 1,086."
    )
    assert error.extra is not None and error.extra["limit"]["largest_award"] is None


def test_staff_set_limit_replaces_the_default(limit_1000):
    market, buyer = pencils_market(), UserFactory()
    SpendingLimit.objects.create(user=buyer, amount=Decimal("5000"))
    bid = bid_place(buyer=buyer, market=market, constraint="lot <= 4000 AND price <= 1.25")
    assert (bid.largest_award, buyer_limit(buyer_id=buyer.pk)) == (Decimal("5000"), 5000)


def test_amending_counts_the_new_terms_not_the_old_ones(limit_1000):
    market, buyer = pencils_market(), UserFactory()
    bid = bid_place(buyer=buyer, market=market, constraint="lot <= 800 AND price <= 1.00")
    # 1,000 at 1.00 fits: the bid's own 800 is not counted against it
    bid = bid_amend(
        buyer=buyer, bid_id=bid.pk, constraint="lot <= 1000 AND price <= 1.00", version=1
    )
    assert (bid.version, bid.largest_award) == (2, Decimal("1000.00"))
    error = refused(
        buyer=buyer, bid_id=bid.pk, constraint="lot <= 1000 AND price <= 1.01", version=2
    )
    assert error.code == "over_limit"
    assert error.extra is not None and error.extra["limit"]["largest_award"] == "1010.00"
    bid.refresh_from_db()
    assert (bid.version, bid.constraint_text, bid.largest_award) == (
        2,
        "lot <= 1000 AND price <= 1.00",
        Decimal("1000.00"),
    )


@pytest.mark.parametrize("pricing", ["first", "second"])
def test_closing_passes_over_a_bid_past_its_limit_and_the_next_wins(limit_1000, pricing):
    """Alice's bid, placed before any offer, has no upper lot (it committed 0); when the
    offer of 5,000 closes, her win would cost 5,500.00 at 1.10 (first) or 5,050.00 at Bob's
    1.00 plus a tick (second), past her limit: Bob's 1.00 for 500 wins at his own value
    (first) or at the reserve (second: alice is out of the auction and no other bid is
    left)."""
    market = pencils_market(pricing=pricing)
    alice, bob, seller = UserFactory(username="alice"), UserFactory(username="bob"), UserFactory()
    a = bid_place(buyer=alice, market=market, constraint="price <= 1.10")
    assert a.largest_award == 0
    b = bid_place(buyer=bob, market=market, constraint="lot = 500 AND price <= 1.00")
    offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 100 AND 5000 AND price >= 0.80"
    )
    matching_cycle_run()
    assert BestOffer.objects.get(offer=offer).bid_id == a.pk
    # staff's winner-to-be says closing will pass alice over
    [preview] = offer_close_previews(offers=[Offer.objects.select_related("market").get()])
    assert (preview.bid.pk, preview.over_limit) == (a.pk, True)

    result = offer_close(offer_id=offer.pk, staff=StaffFactory())

    trade = Trade.objects.get(offer=offer)
    assert result.trade == trade
    price = Decimal("1.00") if pricing == "first" else Decimal("0.80")
    total = "5,500.00" if pricing == "first" else "5,050.00"
    assert (trade.bid_id, trade.price, trade.quantity) == (b.pk, price, 500)
    assert {b.pk: b.state for b in Bid.objects.all()} == {a.pk: "active", b.pk: "filled"}
    outcomes = {
        o.bid_id: (o.result, o.price, o.total, o.remaining) for o in BidOutcome.objects.all()
    }
    assert outcomes == {
        a.pk: ("over_limit", price, Decimal(total.replace(",", "")), Decimal("1000")),
        b.pk: ("won", price, price * 500, None),
    }
    note = Notification.objects.get(recipient=alice, type="offer_ended")
    assert (note.type, note.data["status"]) == ("offer_ended", "over_limit")
    assert note_text(note.type, note.data) == (
        f"Auction ended, you did not win offer #{offer.pk}: bid #{a.pk} would have cost "
        f"{total} EUR, more than the 1,000.00 EUR left of your spending limit; it went to "
        f"another bid at {price} EUR.",
        "bad",
    )


def test_closing_unsold_when_every_bid_is_past_its_limit(limit_1000):
    market, alice = pencils_market(), UserFactory(username="alice")
    a = bid_place(buyer=alice, market=market, constraint="price <= 1.10")
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot BETWEEN 100 AND 5000 AND price >= 0.80"
    )
    matching_cycle_run()

    result = offer_close(offer_id=offer.pk, staff=StaffFactory())

    assert (result.state, result.trade, Trade.objects.count()) == ("closed", None, 0)
    assert Bid.objects.get(pk=a.pk).state == "active"
    note = Notification.objects.get(recipient=alice, type="offer_ended")
    assert note_text(note.type, note.data)[0] == (
        f"Auction ended, you did not win offer #{offer.pk}: bid #{a.pk} would have cost "
        "5,500.00 EUR, more than the 1,000.00 EUR left of your spending limit; it closed unsold."
    )


def test_staff_set_a_limit_in_the_admin(client, limit_1000):
    market, buyer = pencils_market(), UserFactory(username="bea")
    bid_place(buyer=buyer, market=market, constraint="lot <= 400 AND price <= 1.00")
    client.force_login(StaffFactory(username="stella", is_superuser=True))
    answer = client.post(
        "/admin/exchange/spendinglimit/add/", {"user": buyer.pk, "amount": "25000"}
    )
    assert answer.status_code == 302
    assert buyer_limit(buyer_id=buyer.pk) == Decimal("25000")
    listing = client.get("/admin/exchange/spendinglimit/").content.decode()
    assert "Default for everyone else: 1,000.00" in listing
    assert '<td class="field-amount_shown">25,000.00</td>' in listing
    assert '<td class="field-committed">400.00</td>' in listing
    # a negative limit is refused by the database's check and the form alike
    answer = client.post(
        f"/admin/exchange/spendinglimit/{buyer.pk}/change/", {"user": buyer.pk, "amount": "-1"}
    )
    assert answer.status_code == 200 and buyer_limit(buyer_id=buyer.pk) == Decimal("25000")


def test_the_demo_loads_within_its_buyers_limits():
    """buyer3's warehouse bid could cost 3,120,000 (600 m² at 5,200): the demo gives buyer3
    a limit of 5,000,000; the other buyers keep the default."""
    call_command("load_demo", stdout=io.StringIO())
    assert Bid.objects.count() == 6
    assert {u: buyer_limit(buyer_id=pk) for u, pk in _ids("buyer1", "buyer3")} == {
        "buyer1": Decimal("100000"),
        "buyer3": Decimal("5000000"),
    }
    assert buyer_committed(buyer_id=dict(_ids("buyer3"))["buyer3"]) == Decimal(
        "3123150"
    )  # and 3,000 pencils at 1.05


def _ids(*names: str) -> list[tuple[str, int]]:
    return list(User.objects.filter(username__in=names).values_list("username", "pk"))


def test_a_second_price_comes_from_the_bids_after_the_winner(limit_1000):
    """Alice's 1.30 is passed over; of the bids left, Bob's 1.20 wins and pays Carol's 1.10
    plus a tick (not Alice's value plus a tick, which he never bid against)."""
    market = pencils_market(pricing="second")
    alice, bob, carol = (UserFactory(username=n) for n in ("alice", "bob", "carol"))
    bid_place(buyer=alice, market=market, constraint="price <= 1.30")
    b = bid_place(buyer=bob, market=market, constraint="lot = 500 AND price <= 1.20")
    bid_place(buyer=carol, market=market, constraint="lot = 500 AND price <= 1.10")
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot BETWEEN 100 AND 5000 AND price >= 0.80"
    )
    matching_cycle_run()

    offer_close(offer_id=offer.pk, staff=StaffFactory())

    trade = Trade.objects.get(offer=offer)
    assert (trade.bid_id, trade.price, trade.quantity) == (b.pk, Decimal("1.11"), 500)
    assert sorted(BidOutcome.objects.values_list("result", flat=True)) == [
        "lost",
        "over_limit",
        "won",
    ]


def test_the_close_confirmation_says_the_best_bid_will_be_passed_over(client, limit_1000):
    market = pencils_market()
    bid_place(buyer=UserFactory(username="alice"), market=market, constraint="price <= 1.10")
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot BETWEEN 100 AND 5000 AND price >= 0.80"
    )
    matching_cycle_run()
    client.force_login(StaffFactory(username="stella", is_superuser=True))
    page = client.post(
        "/admin/exchange/offer/",
        {"action": "close_auctions", "_selected_action": [offer.pk]},
    ).content.decode()
    assert (
        "by alice <strong>past the buyer's spending limit: closing passes it over and the next "
        "bid that fits wins</strong>"
    ) in page.replace("&#x27;", "'")
