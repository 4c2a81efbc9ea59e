"""Migration 0010 builds the log of the data that existed before it, in time order."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.contrib.auth.models import User as CurrentUser
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from exchange.models import Event, EventCounter
from exchange.selectors.events import event_json
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import offer_withdraw
from tests.factories import PENCILS_SCHEMA

BEFORE = [("exchange", "0009_event_log")]
AFTER = [("exchange", "0010_event_log_history")]
T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


def at(minutes: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


@pytest.fixture
def old_apps():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    yield executor.loader.project_state(BEFORE).apps
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_existing_offers_bids_best_offers_and_trades_become_events_in_time_order(old_apps):
    # Given data written before the log: a sale, a withdrawn offer and bid, an unsold
    # offer, an open offer whose stored text no longer parses, and best-offer history
    apps = old_apps
    Offer, Bid = apps.get_model("exchange", "Offer"), apps.get_model("exchange", "Bid")
    User = apps.get_model("auth", "User")
    seller, buyer = User.objects.create(username="seller"), User.objects.create(username="buyer")
    market = apps.get_model("exchange", "Market").objects.create(
        subject="office.supplies.pencils", title="Pencils", schema=PENCILS_SCHEMA
    )

    def order(model, owner, text, created, **fields):
        made = model.objects.create(
            market=market, constraint_text=text, constraint_json={}, **owner, **fields
        )
        model.objects.filter(pk=made.pk).update(created_at=created, updated_at=created)
        return made

    sold = order(
        Offer,
        {"seller": seller},
        "lot BETWEEN 1000 AND 10000 AND price >= 0.90",
        at(0),
        version=2,
        state="closed",
    )
    lost = order(Bid, {"buyer": buyer}, "lot = 1 AND price <= 0.10", at(1), state="withdrawn")
    Bid.objects.filter(pk=lost.pk).update(updated_at=at(60))
    won = order(
        Bid, {"buyer": buyer}, "lot BETWEEN 2000 AND 5000 AND price <= 1.10", at(2), state="filled"
    )
    gone = order(Offer, {"seller": seller}, "lot = 7 AND price = 3.00", at(3), state="withdrawn")
    Offer.objects.filter(pk=gone.pk).update(updated_at=at(50))
    unsold = order(Offer, {"seller": seller}, "lot = 8 AND price = 4.00", at(4), state="closed")
    Offer.objects.filter(pk=unsold.pk).update(updated_at=at(70))
    order(Offer, {"seller": seller}, "lot = ((", at(5))
    History = apps.get_model("exchange", "BestOfferChange")
    History.objects.create(offer=sold, bid=won, value=Decimal("1.10"), matching_bids=1, at=at(10))
    trade = apps.get_model("exchange", "Trade").objects.create(
        offer=sold,
        bid=won,
        market=market,
        seller=seller,
        buyer=buyer,
        price=Decimal("1.10"),
        quantity=Decimal("5000"),
        pricing="first",
        agreed_constraint="x",
        agreed_constraint_json={},
        closed_at=at(30),
    )
    last_change = History.objects.create(
        offer=sold, bid=None, value=None, matching_bids=0, at=at(31)
    )

    # When the migration runs
    MigrationExecutor(connection).migrate(AFTER)

    # Then the log holds their events, in time order, numbered from 1
    subject = "office.supplies.pencils"
    assert [event_json(e) for e in Event.objects.order_by("seq")] == [
        {
            "seq": 1,
            "time": "2026-03-01T09:00:00Z",
            "type": "offer_posted",
            "subject": subject,
            "offer": sold.pk,
            "version": 2,
            "ask": "0.90",
            "quantity_min": 1000,
            "quantity_max": 10000,
            "constraint": "lot BETWEEN 1000 AND 10000 AND price >= 0.90",
        },
        {
            "seq": 2,
            "time": "2026-03-01T09:01:00Z",
            "type": "bid_placed",
            "subject": subject,
            "bid": lost.pk,
            "version": 1,
            "limit": "0.10",
            "constraint": "lot = 1 AND price <= 0.10",
        },
        {
            "seq": 3,
            "time": "2026-03-01T09:02:00Z",
            "type": "bid_placed",
            "subject": subject,
            "bid": won.pk,
            "version": 1,
            "limit": "1.10",
            "constraint": "lot BETWEEN 2000 AND 5000 AND price <= 1.10",
        },
        {
            "seq": 4,
            "time": "2026-03-01T09:03:00Z",
            "type": "offer_posted",
            "subject": subject,
            "offer": gone.pk,
            "version": 1,
            "ask": "3.00",
            "quantity_min": 7,
            "quantity_max": 7,
            "constraint": "lot = 7 AND price = 3.00",
        },
        {
            "seq": 5,
            "time": "2026-03-01T09:04:00Z",
            "type": "offer_posted",
            "subject": subject,
            "offer": unsold.pk,
            "version": 1,
            "ask": "4.00",
            "quantity_min": 8,
            "quantity_max": 8,
            "constraint": "lot = 8 AND price = 4.00",
        },
        {
            "seq": 6,
            "time": "2026-03-01T09:10:00Z",
            "type": "best_offer",
            "subject": subject,
            "offer": sold.pk,
            "value": "1.10",
            "matching_bids": 1,
        },
        {
            "seq": 7,
            "time": "2026-03-01T09:30:00Z",
            "type": "offer_closed",
            "subject": subject,
            "offer": sold.pk,
            "outcome": "sold",
        },
        {
            "seq": 8,
            "time": "2026-03-01T09:30:00Z",
            "type": "trade",
            "subject": subject,
            "offer": sold.pk,
            "trade": trade.pk,
            "price": "1.10",
            "quantity": 5000,
        },
        {
            "seq": 9,
            "time": "2026-03-01T09:30:00Z",
            "type": "bid_filled",
            "subject": subject,
            "bid": won.pk,
        },
        {
            "seq": 10,
            "time": "2026-03-01T09:31:00Z",
            "type": "best_offer",
            "subject": subject,
            "offer": sold.pk,
            "matching_bids": 0,
        },
        {
            "seq": 11,
            "time": "2026-03-01T09:50:00Z",
            "type": "offer_withdrawn",
            "subject": subject,
            "offer": gone.pk,
        },
        {
            "seq": 12,
            "time": "2026-03-01T10:00:00Z",
            "type": "bid_withdrawn",
            "subject": subject,
            "bid": lost.pk,
        },
        {
            "seq": 13,
            "time": "2026-03-01T10:10:00Z",
            "type": "offer_closed",
            "subject": subject,
            "offer": unsold.pk,
            "outcome": "unsold",
        },
    ]
    assert Event.objects.filter(type__startswith="bid_").exclude(owner_id=buyer.pk).count() == 0
    counter = EventCounter.objects.get()
    assert (counter.last_seq, counter.last_time, counter.best_change_id) == (
        13,
        at(70),
        last_change.pk,
    )
    # and the writer goes on from there
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text FROM exchange_event WHERE seq = 1")
        assert cursor.fetchone()[0] == "exchange_event_p20260301"


@pytest.mark.django_db(transaction=True)
def test_the_writer_continues_after_the_migrated_events(old_apps):
    apps = old_apps
    User = apps.get_model("auth", "User")
    seller = User.objects.create(username="seller")
    market = apps.get_model("exchange", "Market").objects.create(
        subject="office.supplies.pencils", title="Pencils", schema=PENCILS_SCHEMA
    )
    old = apps.get_model("exchange", "Offer").objects.create(
        market=market,
        seller=seller,
        constraint_text="lot = 1 AND price >= 1.00",
        constraint_json={},
    )
    MigrationExecutor(connection).migrate(AFTER)

    offer_withdraw(seller=CurrentUser.objects.get(pk=seller.pk), offer_id=old.pk)
    matching_cycle_run()
    assert list(Event.objects.order_by("seq").values_list("seq", "type")) == [
        (1, "offer_posted"),
        (2, "offer_withdrawn"),
    ]
