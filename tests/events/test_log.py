"""The event log's writer (SPEC 8.1): every type with exactly its attributes, one event per
committed change and none for a rolled-back one, visibility per SPEC 5.6."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.utils import timezone

from exchange.models import Event, EventCounter, OrderChange
from exchange.selectors.events import event_json, events_visible
from exchange.services.closing import offer_close
from exchange.services.markets import market_create
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import (
    bid_amend,
    bid_place,
    bid_withdraw,
    offer_amend,
    offer_cancel,
    offer_publish,
    offer_withdraw,
)
from matching.subscriptions.events import event_from_dict
from matching.subscriptions.language.schema import EVENT_TYPES, OWNER_AND_STAFF
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db


def logged(user=None):
    """The log as ``user`` (default: staff) reads it, without ``time``."""
    reader = user if user is not None else StaffFactory(username="reader")
    return [
        {k: v for k, v in event_json(e).items() if k != "time"} for e in events_visible(user=reader)
    ]


def test_every_event_type_with_exactly_its_attributes():
    # Given a pencils market (an int quantity), a seller, a buyer and staff
    market = pencils_market()
    seller, buyer, staff = UserFactory(), UserFactory(), StaffFactory()
    closes = dt.datetime(2030, 5, 1, 12, 0, tzinfo=dt.UTC)

    # When the whole life of two offers and two bids happens, a cycle after each change
    offer = offer_publish(
        seller=seller,
        market=market,
        constraint="lot BETWEEN 1000 AND 10000 AND price >= 0.90 OR lot >= 20000 AND price >= 0.80",
        closes_at=closes,
    )
    matching_cycle_run()
    bid = bid_place(buyer=buyer, market=market, constraint="lot IN [2000, 5000] AND price <= 1.10")
    matching_cycle_run()
    bid_amend(buyer=buyer, bid_id=bid.pk, constraint="lot = 3000 AND price <= 1.20", version=1)
    matching_cycle_run()
    offer_amend(
        seller=seller,
        offer_id=offer.pk,
        constraint="lot BETWEEN 1000 AND 4000 AND price >= 1.00",
        version=1,
    )
    matching_cycle_run()
    other = offer_publish(seller=seller, market=market, constraint="lot = 10 AND price = 2.00")
    third = offer_publish(seller=seller, market=market, constraint="lot = 10 AND price = 3.00")
    loser = bid_place(buyer=buyer, market=market, constraint="price <= 0.50")
    matching_cycle_run()
    closed = offer_close(offer_id=offer.pk, staff=staff)
    offer_withdraw(seller=seller, offer_id=other.pk)
    offer_cancel(staff=staff, offer_id=third.pk)
    bid_withdraw(buyer=buyer, bid_id=loser.pk)
    matching_cycle_run()
    unsold = offer_close(
        offer_id=offer_publish(
            seller=seller, market=market, constraint="lot = 1 AND price = 9.00"
        ).pk,
        staff=staff,
    )

    # Then staff read exactly these events, seq 1, 2, 3, ... in commit order
    subject = "office.supplies.pencils"
    o, b, t = offer.pk, bid.pk, closed.trade.pk
    assert logged() == [
        {
            "seq": 1,
            "type": "offer_posted",
            "subject": subject,
            "offer": o,
            "version": 1,
            "ask": "0.80",
            "quantity_min": 1000,
            "closes_at": "2030-05-01T12:00:00Z",
            "constraint": offer.constraint_text,
        },
        {
            "seq": 2,
            "type": "bid_placed",
            "subject": subject,
            "bid": b,
            "version": 1,
            "limit": "1.10",
            "constraint": "lot BETWEEN 2000 AND 5000 AND price <= 1.10",
        },
        {
            "seq": 3,
            "type": "best_offer",
            "subject": subject,
            "offer": o,
            "value": "1.10",
            "matching_bids": 1,
        },
        {
            "seq": 4,
            "type": "bid_amended",
            "subject": subject,
            "bid": b,
            "version": 2,
            "limit": "1.20",
            "constraint": "lot = 3000 AND price <= 1.20",
        },
        {
            "seq": 5,
            "type": "best_offer",
            "subject": subject,
            "offer": o,
            "value": "1.20",
            "matching_bids": 1,
        },
        {
            "seq": 6,
            "type": "offer_amended",
            "subject": subject,
            "offer": o,
            "version": 2,
            "ask": "1.00",
            "quantity_min": 1000,
            "quantity_max": 4000,
            "closes_at": "2030-05-01T12:00:00Z",
            "constraint": "lot BETWEEN 1000 AND 4000 AND price >= 1.00",
        },
        {
            "seq": 7,
            "type": "offer_posted",
            "subject": subject,
            "offer": other.pk,
            "version": 1,
            "ask": "2.00",
            "quantity_min": 10,
            "quantity_max": 10,
            "constraint": "lot = 10 AND price = 2.00",
        },
        {
            "seq": 8,
            "type": "offer_posted",
            "subject": subject,
            "offer": third.pk,
            "version": 1,
            "ask": "3.00",
            "quantity_min": 10,
            "quantity_max": 10,
            "constraint": "lot = 10 AND price = 3.00",
        },
        {
            "seq": 9,
            "type": "bid_placed",
            "subject": subject,
            "bid": loser.pk,
            "version": 1,
            "limit": "0.50",
            "constraint": loser.constraint_text,
        },
        {"seq": 10, "type": "offer_closed", "subject": subject, "offer": o, "outcome": "sold"},
        {
            "seq": 11,
            "type": "trade",
            "subject": subject,
            "offer": o,
            "trade": t,
            "price": "1.20",
            "quantity": 3000,
        },
        {"seq": 12, "type": "bid_filled", "subject": subject, "bid": b},
        {"seq": 13, "type": "best_offer", "subject": subject, "offer": o, "matching_bids": 0},
        {"seq": 14, "type": "offer_withdrawn", "subject": subject, "offer": other.pk},
        {"seq": 15, "type": "offer_cancelled", "subject": subject, "offer": third.pk},
        {"seq": 16, "type": "bid_withdrawn", "subject": subject, "bid": loser.pk},
        {
            "seq": 17,
            "type": "offer_posted",
            "subject": subject,
            "offer": unsold.offer.pk,
            "version": 1,
            "ask": "9.00",
            "quantity_min": 1,
            "quantity_max": 1,
            "constraint": "lot = 1 AND price = 9.00",
        },
        {
            "seq": 18,
            "type": "offer_closed",
            "subject": subject,
            "offer": unsold.offer.pk,
            "outcome": "unsold",
        },
    ]
    # and every type of SPEC 8.1's table appears, each with attributes of its row only
    events = [event_json(e) for e in events_visible(user=staff)]
    assert {e["type"] for e in events} == set(EVENT_TYPES)
    for e in events:
        spec = EVENT_TYPES[e["type"]]
        assert set(e) - {"seq", "time", "type", "subject"} <= set(spec.attributes)
        assert set(spec.attributes) - spec.optional <= set(e)
        event_from_dict(e)  # the offline evaluator reads it as it is
    # time is a Z timestamp that never decreases
    times = [e["time"] for e in events]
    assert all(t.endswith("Z") for t in times) and times == sorted(times)
    assert EventCounter.objects.get().last_seq == 18


def test_decimal_quantities_travel_as_strings_and_open_sides_are_absent():
    market = market_create(
        subject="bulk.flour",
        title="Flour",
        schema=[
            {"name": "kg", "type": "decimal", "role": "quantity"},
            {"name": "price", "type": "decimal", "role": "price"},
        ],
        tick="0.05",
        pricing="first",
    )
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="kg >= 2.5 AND price >= 1"
    )
    bid = bid_place(buyer=UserFactory(), market=market, constraint="kg <= 10 AND price <= 1.5")
    staff = StaffFactory()
    offer_close(offer_id=offer.pk, staff=staff)
    assert [
        {k: v for k, v in e.items() if k not in ("seq", "time", "subject", "constraint")}
        for e in map(event_json, events_visible(user=staff))
    ] == [
        {
            "type": "offer_posted",
            "offer": offer.pk,
            "version": 1,
            "ask": "1.00",
            "quantity_min": "2.5",
        },
        {"type": "bid_placed", "bid": bid.pk, "version": 1, "limit": "1.50"},
        {"type": "best_offer", "offer": offer.pk, "value": "1.50", "matching_bids": 1},
        {"type": "offer_closed", "offer": offer.pk, "outcome": "sold"},
        {
            "type": "trade",
            "offer": offer.pk,
            "trade": offer.trade.pk,
            "price": "1.50",
            "quantity": "10",
        },
        {"type": "bid_filled", "bid": bid.pk},
        {"type": "best_offer", "offer": offer.pk, "matching_bids": 0},
    ]


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_who_sees_each_event_type(event_type):
    # Given one event of each type, the private ones owned by the buyer
    market = pencils_market()
    seller, buyer, stranger, staff = UserFactory(), UserFactory(), UserFactory(), StaffFactory()
    offer = offer_publish(seller=seller, market=market, constraint="lot = 10 AND price >= 1.00")
    bid = bid_place(buyer=buyer, market=market, constraint="price <= 2.00")
    other = bid_place(buyer=buyer, market=market, constraint="price <= 0.10")
    matching_cycle_run()
    bid_amend(buyer=buyer, bid_id=other.pk, constraint="price <= 0.20", version=1)
    bid_withdraw(buyer=buyer, bid_id=other.pk)
    gone = offer_publish(seller=seller, market=market, constraint="lot = 10 AND price >= 5.00")
    offer_amend(seller=seller, offer_id=gone.pk, constraint="lot = 10 AND price >= 6.00", version=1)
    offer_withdraw(seller=seller, offer_id=gone.pk)
    cancelled = offer_publish(seller=seller, market=market, constraint="lot = 10 AND price >= 5.00")
    offer_cancel(staff=staff, offer_id=cancelled.pk)
    offer_close(offer_id=offer.pk, staff=staff)
    assert Event.objects.filter(type=event_type).exists()

    def sees(user):
        return events_visible(user=user).filter(type=event_type).exists()

    # Then the public types reach everyone, the bid_* types only the bidder and staff
    public = EVENT_TYPES[event_type].visible_to != OWNER_AND_STAFF
    assert (sees(AnonymousUser()), sees(seller), sees(stranger), sees(buyer), sees(staff)) == (
        public,
        public,
        public,
        True,
        True,
    )
    assert bid.pk  # the filled bid's events belong to the buyer as well


def test_a_rolled_back_change_has_no_event_and_leaves_no_hole():
    market = pencils_market()
    seller = UserFactory()
    offer_publish(seller=seller, market=market, constraint="lot = 1 AND price >= 1.00")

    # When a request's transaction rolls back after the change, and a cycle's too
    with pytest.raises(RuntimeError), transaction.atomic():
        offer_publish(seller=seller, market=market, constraint="lot = 2 AND price >= 1.00")
        raise RuntimeError("the request fails after the change")
    with pytest.raises(RuntimeError), transaction.atomic():
        matching_cycle_run()
        assert Event.objects.count() == 1
        raise RuntimeError("the cycle's transaction fails after writing")

    # Then nothing of them is in the log, and the next events follow on without a hole
    assert Event.objects.count() == 0
    assert EventCounter.objects.get().last_seq == 0
    assert OrderChange.objects.filter(processed_at=None).count() == 1
    offer_publish(seller=seller, market=market, constraint="lot = 3 AND price >= 1.00")
    matching_cycle_run()
    assert [
        (e.seq, e.data["ask"], e.data["quantity_min"]) for e in Event.objects.order_by("seq")
    ] == [
        (1, "1.00", 1),
        (2, "1.00", 3),
    ]


def test_a_cycle_without_changes_writes_nothing():
    pencils_market()
    assert matching_cycle_run().events == 0
    assert not Event.objects.exists()


def test_time_never_goes_back_even_when_the_clock_does(monkeypatch):
    market = pencils_market()
    seller = UserFactory()
    offer_publish(seller=seller, market=market, constraint="lot = 1 AND price >= 1.00")
    matching_cycle_run()
    first = Event.objects.get()
    # The counter says the last event was in the future (a clock that was ahead, then fixed)
    ahead = timezone.now() + dt.timedelta(hours=1)
    EventCounter.objects.update(last_time=ahead)
    offer_publish(seller=seller, market=market, constraint="lot = 2 AND price >= 1.00")
    matching_cycle_run()
    second = Event.objects.get(seq=2)
    assert first.time < second.time == ahead
