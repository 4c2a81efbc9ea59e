"""One bad order never stops the exchange (issue 15): limits hold on the stored form, and the
cycle and closing set aside an order whose stored text the engine cannot use, then go on."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

import matching
from exchange import models
from exchange.errors import InvalidInput
from exchange.services.closing import offer_close, offer_close_preview
from exchange.services.markets import market_create, market_update
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_amend, bid_place, offer_publish
from exchange.services.verification import best_offers_verify
from matching.store.paper import PaperStore
from matching.store.ranges import RangeStore
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("strategy")]

# A text the parser refuses: what a row changed behind the services' back may hold.
BROKEN = "price <= AND lot"


def wide_market():
    """A market of five attributes: a bid that names only the price gets four wildcards."""
    schema = [{"name": "price", "type": "decimal", "role": "price", "required_on_bid": True}]
    schema += [{"name": f"a{i}", "type": "int"} for i in range(4)]
    return market_create(subject="wide.things", title="Wide", schema=schema)


# 64 alternatives of one predicate: 64 written, 64 x 6 = 384 once stored (4 wildcards and the
# subject added to each), over the limit of 256.
WIDE_BID = " OR ".join(f"price <= {1 + i / 100:.2f}" for i in range(64))


def best(offer):
    row = models.BestOffer.objects.get(offer=offer)
    return row.bid_id, row.value, row.matching_bids


def poison(order):
    """Change an order's stored text with SQL, as a bug or an operator might."""
    type(order).objects.filter(pk=order.pk).update(constraint_text=BROKEN)


def settled_book():
    """A pencils offer and two matching bids after a cycle: alice's (2.00, best), bob's (1.50).
    Returns (market, seller, alice, offer, alice's bid, bob's bid)."""
    market = pencils_market()
    seller, alice, bob = (UserFactory(username=n) for n in ("seller", "alice", "bob"))
    offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
    )
    first = bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 2.00")
    second = bid_place(buyer=bob, market=market, constraint="lot = 10 AND price <= 1.50")
    matching_cycle_run()
    return market, seller, alice, offer, first, second


# -- limits on the stored form -------------------------------------------------------------


def test_api_refuses_a_bid_over_the_limit_once_stored():
    market = wide_market()
    buyer = UserFactory(username="buyer")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=buyer).key}")
    response = client.post(
        "/api/v1/bids/", {"market": market.subject, "constraint": WIDE_BID}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["field"], error["position"]) == (
        "too_many_predicates",
        "constraint",
        0,
    )
    assert "384 conditions" in error["message"]
    assert "more than the 256 allowed" in error["message"]
    assert models.Bid.objects.count() == 0
    assert models.OrderChange.objects.count() == 0


def test_the_same_bid_with_every_attribute_named_is_refused_too():
    # Naming the attributes instead of leaving them to the rules changes nothing: the limit
    # is on the stored form.
    market = wide_market()
    text = " OR ".join(
        f"price <= {1 + i / 100:.2f} AND a0 = * AND a1 = * AND a2 = * AND a3 = *" for i in range(64)
    )
    with pytest.raises(InvalidInput) as raised:
        bid_place(buyer=UserFactory(), market=market, constraint=text)
    assert raised.value.code == "too_many_predicates"
    assert models.Bid.objects.count() == 0


@pytest.mark.parametrize(
    "side, source",
    [
        ("bid", "price <= 1.10"),
        ("bid", "price < 1.10 OR (price <= 3 AND a0 > 5)"),
        ("bid", " OR ".join(f"price <= {1 + i / 100:.2f}" for i in range(40))),
        ("offer", "price >= 0.90 AND a1 IN [1, 9]"),
    ],
)
def test_stored_text_round_trips_and_is_accepted_again(side, source):
    # SPEC 2.5: the stored text parses to the same constraint and, re-submitted, is accepted
    # and stored as the very same text.
    market = wide_market()
    user = UserFactory()
    place = offer_publish if side == "offer" else bid_place
    key = "seller" if side == "offer" else "buyer"
    first = place(**{key: user}, market=market, constraint=source)
    again = place(**{key: user}, market=market, constraint=first.constraint_text)
    assert again.constraint_text == first.constraint_text
    assert matching.parse(first.constraint_text) == matching.parse(again.constraint_text)


# -- the cycle sets a bad order aside and carries on ------------------------------------------


def test_cycle_sets_aside_a_poisoned_changed_order_and_matches_the_rest():
    market = pencils_market()
    seller = UserFactory(username="seller")
    alice, bob, carol = (UserFactory(username=n) for n in ("alice", "bob", "carol"))
    offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
    )
    bad = bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 2.00")
    poison(bad)  # before its first cycle: its change is in the same batch as the others
    good = bid_place(buyer=bob, market=market, constraint="lot = 10 AND price <= 1.50")
    bid_place(buyer=carol, market=market, constraint="lot = 20 AND price <= 1.20")
    mark = models.Notification.objects.order_by("-id").values_list("id", flat=True).first()

    report = matching_cycle_run()

    assert report.changes == 4
    assert best(offer) == (good.pk, Decimal("1.50"), 2)
    bad.refresh_from_db()
    assert bad.state == models.Bid.State.ACTIVE and bad.set_aside_at is not None
    assert bad.set_aside_reason.startswith("its stored constraint does not parse: ")
    assert not models.OfferBidMatch.objects.filter(bid=bad).exists()
    cycle = models.MatchingCycle.objects.get()
    assert (cycle.changes, cycle.set_aside) == (4, 1)
    note = models.Notification.objects.get(id__gt=mark, type="set_aside")
    assert (note.recipient_id, note.offer_id, note.market_id) == (alice.pk, None, market.pk)
    assert note.data["bid"] == bad.pk and note.data["reason"] == bad.set_aside_reason
    assert note.data["message"].startswith(f"Your bid {bad.pk} is left out of matching")
    assert not models.OrderChange.objects.filter(processed_at=None).exists()
    assert best_offers_verify().clean


def test_cycle_sets_aside_a_poisoned_order_it_meets_while_matching():
    # The bad bid changed without an OrderChange: the cycle meets it only as a match of a
    # changed offer, rolls that work back, sets it aside and matches again without it.
    market, seller, alice, first, bad, good = settled_book()
    assert best(first) == (bad.pk, Decimal("2.00"), 2)
    poison(bad)
    second = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 5 AND 50 AND price >= 1.00"
    )

    matching_cycle_run()

    bad.refresh_from_db()
    assert bad.set_aside_at is not None
    assert best(second) == (good.pk, Decimal("1.50"), 1)
    assert best(first) == (good.pk, Decimal("1.50"), 1)  # the bad bid lost its place here too
    assert models.MatchingCycle.objects.order_by("-id").first().set_aside == 1
    assert models.Notification.objects.filter(type="set_aside", recipient=alice).count() == 1
    assert models.Notification.objects.filter(
        type="best_bid", recipient=good.buyer, offer=first
    ).exists()
    assert best_offers_verify().clean


def test_a_set_aside_bid_comes_back_when_its_owner_amends_it():
    market = pencils_market()
    seller, alice = UserFactory(username="seller"), UserFactory(username="alice")
    offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
    )
    bad = bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 2.00")
    poison(bad)
    matching_cycle_run()
    assert best(offer) == (None, None, 0)

    amended = bid_amend(
        buyer=alice, bid_id=bad.pk, constraint="lot = 10 AND price <= 1.80", version=1
    )
    matching_cycle_run()

    assert (amended.set_aside_at, amended.set_aside_reason, amended.version) == (None, "", 2)
    assert best(offer) == (bad.pk, Decimal("1.80"), 1)


def test_setting_aside_needs_a_reason_in_the_database():
    market = pencils_market()
    bid = bid_place(buyer=UserFactory(), market=market, constraint="price <= 1.00")
    with pytest.raises(IntegrityError), transaction.atomic():
        models.Bid.objects.filter(pk=bid.pk).update(set_aside_at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        models.Bid.objects.filter(pk=bid.pk).update(set_aside_reason="no time")
    bid.refresh_from_db()
    assert (bid.set_aside_at, bid.set_aside_reason) == (None, "")


# -- closing keeps working -----------------------------------------------------------------


def test_closing_passes_over_a_poisoned_best_bid_to_the_next():
    _, _, alice, offer, bad, good = settled_book()
    staff = StaffFactory()
    poison(bad)  # behind the API's back, no change recorded: closing meets it first
    preview = offer_close_preview(offer_id=offer.pk)
    assert preview.bid is None and preview.unusable.startswith("its stored constraint")

    result = offer_close(offer_id=offer.pk, staff=staff)

    assert result.trade is not None
    assert (result.trade.bid_id, result.trade.price) == (good.pk, Decimal("1.50"))
    assert result.trade.agreed_constraint == (
        "subject = 'office.supplies.pencils' AND lot = 10 AND price BETWEEN 1.00 AND 1.50"
    )
    bad.refresh_from_db()
    assert bad.set_aside_at is not None and bad.state == models.Bid.State.ACTIVE
    assert models.Notification.objects.filter(type="set_aside", recipient=alice).count() == 1


def test_closing_a_poisoned_offer_closes_it_unsold_and_other_closings_work():
    market = pencils_market()
    staff = StaffFactory()
    seller, alice = UserFactory(username="seller"), UserFactory(username="alice")
    bad = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
    )
    fine = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
    )
    bid = bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 2.00")
    matching_cycle_run()
    poison(bad)
    models.OrderChange.objects.create(side="offer", order_id=bad.pk)  # pending when closing starts

    closed_fine = offer_close(offer_id=fine.pk, staff=staff)
    closed_bad = offer_close(offer_id=bad.pk, staff=staff)

    assert closed_fine.trade is not None and closed_fine.trade.bid_id == bid.pk
    assert closed_bad.trade is None and closed_bad.state == models.Offer.State.CLOSED
    bad.refresh_from_db()
    assert bad.set_aside_at is not None
    assert models.Trade.objects.count() == 1
    # closing took the pending change through the cycle's batch code: a cycle row records it
    assert models.MatchingCycle.objects.order_by("-id").filter(set_aside=1).count() == 1


def test_dashboard_lists_set_aside_orders_with_the_reason(client):
    market = pencils_market()
    alice = UserFactory(username="alice")
    bad = bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 2.00")
    poison(bad)
    matching_cycle_run()
    bad.refresh_from_db()
    client.force_login(StaffFactory())

    page = client.get("/staff/").content.decode()

    assert f"bid {bad.pk}</a></td><td>office.supplies.pencils</td><td>alice</td>" in page
    assert "its stored constraint does not parse" in page


def test_the_api_shows_why_an_order_is_set_aside_and_null_otherwise():
    market, seller, alice, good_offer, bad_bid, _ = settled_book()
    good_bid = bid_place(buyer=alice, market=market, constraint="lot = 20 AND price <= 1.10")
    bad_offer = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 50 AND price >= 1.00"
    )
    poison(bad_offer)
    poison(bad_bid)
    models.OrderChange.objects.create(side="bid", order_id=bad_bid.pk)
    matching_cycle_run()
    bad_offer.refresh_from_db()
    bad_bid.refresh_from_db()
    assert bad_offer.set_aside_reason.startswith("its stored constraint does not parse: ")
    assert bad_bid.set_aside_reason.startswith("its stored constraint does not parse: ")
    anonymous, owner = APIClient(), APIClient()
    owner.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")

    def reason(client, path):
        response = client.get(path)
        assert response.status_code == 200
        return response.json()["set_aside_reason"]

    assert reason(anonymous, f"/api/v1/offers/{bad_offer.pk}/") == bad_offer.set_aside_reason
    assert reason(anonymous, f"/api/v1/offers/{good_offer.pk}/") is None
    assert reason(owner, f"/api/v1/bids/{bad_bid.pk}/") == bad_bid.set_aside_reason
    assert reason(owner, f"/api/v1/bids/{good_bid.pk}/") is None
    listed = {b["id"]: b["set_aside_reason"] for b in owner.get("/api/v1/bids/").json()["results"]}
    assert listed == {bad_bid.pk: bad_bid.set_aside_reason, good_bid.pk: None}


def test_a_schema_change_goes_on_past_a_bid_that_no_longer_parses():
    # Given a settled book in which bob's bid was broken behind the services' back
    market, _seller, _alice, offer, first, second = settled_book()
    poison(second)
    schema = [dict(a) for a in market.schema] + [{"name": "grade", "type": "string"}]

    # When staff add an attribute to the market, then the cycle runs
    market_update(market_id=market.pk, schema=schema)
    first.refresh_from_db()
    assert first.constraint_text.endswith("AND string grade = *")  # widened as usual
    assert models.OrderChange.objects.filter(side="bid", order_id=second.pk).exists()
    matching_cycle_run()

    # Then the broken bid is set aside, untouched, and alice's bid is still the best
    second.refresh_from_db()
    assert second.constraint_text == BROKEN
    assert second.set_aside_at is not None
    assert best(offer) == (first.pk, Decimal("2.00"), 1)


def test_an_order_amended_while_the_cycle_reads_it_is_matched_on_its_new_text(monkeypatch):
    # Given a bid whose stored text is broken when the cycle first reads it, and that its
    # owner repairs (as an amend would) before the cycle locks it to set it aside
    import exchange.services.matching as cycle

    market, _seller, _alice, offer, first, _second = settled_book()
    late = bid_place(buyer=UserFactory(), market=market, constraint="lot = 10 AND price <= 3.00")
    good_text = models.Bid.objects.get(pk=late.pk).constraint_text
    poison(late)
    real_set_aside = cycle.orders_set_aside

    def amended_meanwhile(*, offer_ids, bid_ids, refused=None):
        models.Bid.objects.filter(pk=late.pk).update(constraint_text=good_text)
        monkeypatch.setattr(cycle, "orders_set_aside", real_set_aside)
        return real_set_aside(offer_ids=offer_ids, bid_ids=bid_ids, refused=refused)

    monkeypatch.setattr(cycle, "orders_set_aside", amended_meanwhile)

    # When the cycle runs, then it tries again on the new text: nothing is set aside and the
    # repaired bid becomes the best
    matching_cycle_run()
    late.refresh_from_db()
    assert late.set_aside_at is None
    assert best(offer) == (late.pk, Decimal("3.00"), 3)
    assert models.MatchingCycle.objects.order_by("-id").first().set_aside == 0


# -- a database error inside the store -----------------------------------------------------


def refuse_in_store(monkeypatch, bid_ids):
    """Make the store's database raise a real error (division by zero: a DataError, which
    aborts the transaction as a value out of a column's range would) whenever a write of
    bids includes one of ``bid_ids``."""
    for cls in (PaperStore, RangeStore):
        real = cls._write

        def write(self, cur, side, items, real=real):
            items = list(items)
            if side == "sub" and any(pk in bid_ids for pk, _ in items):
                cur.execute("SELECT 1 / 0")
            return real(self, cur, side, items)

        monkeypatch.setattr(cls, "_write", write)


def test_a_bid_the_stores_database_refuses_is_set_aside_and_the_cycle_goes_on(monkeypatch):
    # Given a settled book, then two new bids in one batch: carol's, which the store's
    # database refuses, and dave's, which it takes
    market, _seller, alice, offer, first, second = settled_book()
    carol, dave = UserFactory(username="carol"), UserFactory(username="dave")
    bad = bid_place(buyer=carol, market=market, constraint="lot = 10 AND price <= 5.00")
    good = bid_place(buyer=dave, market=market, constraint="lot = 10 AND price <= 2.50")
    refuse_in_store(monkeypatch, {bad.pk})

    # When the cycle runs
    matching_cycle_run()

    # Then carol's bid alone is set aside, with the database's reason, and she is told
    bad.refresh_from_db()
    good.refresh_from_db()
    assert bad.set_aside_at is not None
    assert bad.set_aside_reason == "the store refused it: division by zero"
    assert good.set_aside_at is None
    # and dave's bid is matched: the best of the offer, among three matching bids
    assert best(offer) == (good.pk, Decimal("2.50"), 3)
    cycle = models.MatchingCycle.objects.order_by("-id").first()
    assert cycle.set_aside == 1
    notes = models.Notification.objects.filter(recipient=carol)
    assert notes.count() == 1
    assert best_offers_verify().clean


def test_a_database_error_that_is_no_orders_fault_still_fails_the_cycle(monkeypatch):
    # Given a store whose writes of bids fail for a reason no order's values explain (a
    # table that is not there: SQLSTATE class 42, not class 22's data exceptions)
    market, *_ = settled_book()
    bid = bid_place(buyer=UserFactory(), market=market, constraint="lot = 10 AND price <= 5.00")

    def broken(self, cur, side, items):
        cur.execute("SELECT * FROM no_such_table")

    for cls in (PaperStore, RangeStore):
        monkeypatch.setattr(cls, "_write", broken)

    # When the cycle runs, then it fails as a whole and sets nothing aside
    with pytest.raises(Exception, match="no_such_table"):
        matching_cycle_run()
    bid.refresh_from_db()
    assert bid.set_aside_at is None


def test_when_every_order_of_a_batch_is_refused_the_cycle_fails_rather_than_set_all_aside(
    monkeypatch,
):
    # Given two new bids, both of which the store's database refuses: the store, not the
    # orders, is what is wrong
    market, *_ = settled_book()
    bids = [
        bid_place(buyer=UserFactory(), market=market, constraint=f"lot = 10 AND price <= {p}")
        for p in ("4.00", "5.00")
    ]
    refuse_in_store(monkeypatch, {b.pk for b in bids})

    with pytest.raises(Exception, match="division by zero"):
        matching_cycle_run()
    assert not models.Bid.objects.filter(set_aside_at__isnull=False).exists()
