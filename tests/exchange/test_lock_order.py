"""Staff cancels, owners' withdrawals and amends meet the set-aside path of cycles and closes
on real sessions, and every interleaving finishes (docs/reliability.md, *No deadlock*).

The documented order: the cycle lock (shared by cycles and staff cancels, exclusive for a
close), a cycle's market locks, the order rows (``FOR NO KEY UPDATE``), the tail lock last.
A close takes order rows after the tail lock (its second batch of pending changes sets
orders aside after the first batch wrote under the tail), which is safe only because nobody
else who waits for the tail can be running beside it: a staff cancel holding its offer's row
while it waited for the tail deadlocked with it.

Each test stops the sessions at the point of the interleaving with a real lock held by a
third session (the tail lock, as another partition's cycle holds it from its notifications
to its commit) or by the order's own uncommitted transaction, and waits until PostgreSQL
reports each session waiting there (``pg_stat_activity``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any
from unittest import mock

import psycopg
import pytest
from django.db import connection, transaction

from exchange.models import BestOffer, Bid, Notification, Offer, OrderChange, Trade
from exchange.services.closing import offer_close
from exchange.services.matching import CYCLE_LOCK, TAIL_LOCK, matching_cycle_run
from exchange.services.orders import (
    bid_amend,
    bid_place,
    offer_cancel,
    offer_publish,
    offer_withdraw,
)
from exchange.services.verification import best_offers_verify
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db(transaction=True)

OFFER = "lot <= 100 AND price >= 1.00"
# 64 alternatives: an owner's eight such offers fill its budget of one batch
# (``OWNER_CYCLE_ALTERNATIVES``, 512), so its next change waits for the batch after.
WIDE_OFFER = " OR ".join(f"lot = {i} AND price >= 1.00" for i in range(1, 65))
BROKEN = "price <= AND lot"  # a text the parser refuses, as in test_set_aside.py


def session() -> psycopg.Connection:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params, autocommit=True)


@pytest.fixture
def watcher() -> Iterator[psycopg.Connection]:
    with session() as other:
        yield other


@pytest.fixture(autouse=True)
def _no_cycle_requests():
    # The tests run the cycles themselves, in the order they need.
    with mock.patch("exchange.services.orders.matching_cycle_request"):
        yield


class Session(threading.Thread):
    """``work`` in a thread on a database session of its own; ``pid`` once it has one,
    then ``result`` or ``error``."""

    def __init__(self, work: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.work = work
        self.pid: int | None = None
        self.has_pid = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                (self.pid,) = cursor.fetchone()
            self.has_pid.set()
            self.result = self.work()
        except BaseException as exc:  # reported by ``done``
            self.error = exc
        finally:
            self.has_pid.set()
            connection.close()

    def done(self) -> Any:
        self.join(60)
        assert not self.is_alive(), "the session never finished"
        if self.error is not None:
            raise self.error
        return self.result


def started(work: Callable[[], Any]) -> Session:
    run = Session(work)
    run.start()
    run.has_pid.wait(10)
    return run


def waits(watcher: psycopg.Connection, run: Session, *events: str) -> str:
    """Wait until ``run``'s session waits for a lock of one of ``events`` (``advisory``;
    ``transactionid`` or ``tuple``: an order's row); returns the one."""
    for _ in range(2000):
        row = watcher.execute(
            "SELECT wait_event_type, wait_event FROM pg_stat_activity WHERE pid = %s", [run.pid]
        ).fetchone()
        if row is not None and row[0] == "Lock" and row[1] in events:
            return row[1]
        assert run.is_alive(), f"the session ended instead of waiting: {run.error!r}"
        time.sleep(0.01)
    raise AssertionError(f"session {run.pid} never waited for {events}")


def idle_in_transaction(watcher: psycopg.Connection, run: Session) -> None:
    """Wait until ``run``'s session has done its work and holds its transaction open."""
    for _ in range(2000):
        row = watcher.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", [run.pid])
        if (row.fetchone() or (None,))[0] == "idle in transaction":
            return
        assert run.is_alive(), f"the session ended: {run.error!r}"
        time.sleep(0.01)
    raise AssertionError(f"session {run.pid} never held its transaction open")


def tail_held(watcher: psycopg.Connection) -> Callable[[], None]:
    """Take the tail lock in ``watcher``'s session, as another partition's cycle holds it;
    returns the release."""
    watcher.execute("SELECT pg_advisory_lock(%s)", [TAIL_LOCK])
    return lambda: watcher.execute("SELECT pg_advisory_unlock(%s)", [TAIL_LOCK])


def poisoned(offer: Offer) -> None:
    """Break an open offer's stored text behind the services' back and record a change of
    it, so that the next batch meets it and has to set it aside."""
    Offer.objects.filter(pk=offer.pk).update(constraint_text=BROKEN)
    OrderChange.objects.create(side="offer", order_id=offer.pk)


def set_aside_notes(user) -> int:
    return Notification.objects.filter(recipient=user, type="set_aside").count()


def test_a_staff_cancel_meets_a_close_that_sets_its_offer_aside_in_a_later_batch(watcher):
    # Given an auction with a bid, and a bot's offer whose change waits behind eight wide
    # offers of the same bot (its budget of one batch): closing the auction takes the wide
    # offers in one batch (writing under the tail lock) and the bot's broken offer in the next,
    # which sets it aside
    market, staff = pencils_market(), StaffFactory()
    seller, bot, buyer = UserFactory(), UserFactory(), UserFactory()
    auction = offer_publish(seller=seller, market=market, constraint=OFFER)
    doomed = offer_publish(seller=bot, market=market, constraint=OFFER)
    bid = bid_place(buyer=buyer, market=market, constraint="lot = 5 AND price <= 1.50")
    matching_cycle_run()
    for _ in range(8):
        offer_publish(seller=bot, market=market, constraint=WIDE_OFFER)
    poisoned(doomed)

    # When the close waits for the tail lock in its first batch, and staff cancel the bot's
    # offer meanwhile (today: its row taken, then waiting for the tail behind the close),
    # and the tail comes free
    release = tail_held(watcher)
    close = started(lambda: offer_close(offer_id=auction.pk, staff=staff))
    waits(watcher, close, "advisory")
    cancel = started(lambda: offer_cancel(staff=staff, offer_id=doomed.pk))
    waits(watcher, cancel, "advisory")
    release()

    # Then both finish (before the fix PostgreSQL aborted one of them: deadlock detected)
    closed = close.done()
    cancelled = cancel.done()
    assert closed.trade is not None and closed.trade.bid_id == bid.pk
    assert cancelled.state == Offer.State.CANCELLED
    doomed.refresh_from_db()
    assert doomed.state == Offer.State.CANCELLED and doomed.set_aside_at is not None
    assert Trade.objects.count() == 1
    assert set_aside_notes(bot) == 1  # set aside while it was open: its seller was told
    matching_cycle_run()
    assert best_offers_verify().clean


def test_a_staff_cancel_waits_for_a_held_cycle_lock_and_writes_nothing_meanwhile():
    # The cancel takes the cycle lock shared, before its offer's row: a close (or a rebuild,
    # a verification) holding the cycle lock is waited for whole.
    market, staff = pencils_market(), StaffFactory()
    auction = offer_publish(seller=UserFactory(), market=market, constraint=OFFER)
    other = offer_publish(seller=UserFactory(), market=market, constraint=OFFER)
    with session() as closer:
        closer.execute("BEGIN")
        closer.execute("SELECT pg_advisory_xact_lock(%s)", [CYCLE_LOCK])
        with session() as watcher:
            cancel = started(lambda: offer_cancel(staff=staff, offer_id=other.pk))
            assert waits(watcher, cancel, "advisory") == "advisory"
            # nothing of the cancel is written while it waits
            assert Offer.objects.get(pk=other.pk).state == Offer.State.OPEN
        closer.execute("COMMIT")
    assert cancel.done().state == Offer.State.CANCELLED
    assert offer_close(offer_id=auction.pk, staff=staff).state == Offer.State.CLOSED


@pytest.mark.parametrize("cancel_first", [True, False], ids=["cancel-first", "cycle-first"])
def test_a_staff_cancel_and_a_cycle_that_sets_its_offer_aside_both_finish(watcher, cancel_first):
    # Given an open offer that the next cycle of its market has to set aside, while another
    # partition's cycle holds the tail lock
    market, staff = pencils_market(), StaffFactory()
    seller = UserFactory()
    doomed = offer_publish(seller=seller, market=market, constraint=OFFER)
    kept = offer_publish(seller=UserFactory(), market=market, constraint=OFFER)
    bid = bid_place(buyer=UserFactory(), market=market, constraint="lot = 5 AND price <= 1.50")
    matching_cycle_run()
    poisoned(doomed)
    release = tail_held(watcher)
    cycle = lambda: matching_cycle_run()  # noqa: E731 - every partition, as one worker runs
    cancel = lambda: offer_cancel(staff=staff, offer_id=doomed.pk)  # noqa: E731

    if cancel_first:
        # When staff cancel it first (its row taken, waiting for the tail), then the cycle
        # comes to set it aside and waits for its row
        first = started(cancel)
        waits(watcher, first, "advisory")
        second = started(cycle)
        waits(watcher, second, "transactionid", "tuple")
    else:
        # When the cycle sets it aside first (its row taken, waiting for the tail), then
        # staff cancel it and wait for its row
        first = started(cycle)
        waits(watcher, first, "advisory")
        second = started(cancel)
        waits(watcher, second, "transactionid", "tuple")
    release()
    first.done()
    second.done()

    # Then both finish, the offer is cancelled, and its seller is told it was set aside only
    # if it was still open when the cycle set it aside
    doomed.refresh_from_db()
    assert doomed.state == Offer.State.CANCELLED
    if cancel_first:
        assert doomed.set_aside_at is None
        assert set_aside_notes(seller) == 0
    else:
        assert doomed.set_aside_at is not None
        assert set_aside_notes(seller) == 1
    assert BestOffer.objects.get(offer=kept).bid_id == bid.pk
    matching_cycle_run()
    assert not BestOffer.objects.filter(offer=doomed).exists()
    assert best_offers_verify().clean


def _held_open(work: Callable[[], Any], go: threading.Event) -> Callable[[], Any]:
    """``work`` in a transaction kept open (its row locks held) until ``go`` is set."""

    def run() -> Any:
        with transaction.atomic():
            result = work()
            go.wait(30)
        return result

    return run


def test_a_withdrawal_under_way_when_the_cycle_sets_its_offer_aside(watcher):
    # Given an offer the next cycle has to set aside, and its seller withdrawing it in a
    # transaction not yet committed (its row held)
    market = pencils_market()
    seller = UserFactory()
    doomed = offer_publish(seller=seller, market=market, constraint=OFFER)
    matching_cycle_run()
    poisoned(doomed)
    go = threading.Event()
    withdraw = started(_held_open(lambda: offer_withdraw(seller=seller, offer_id=doomed.pk), go))
    idle_in_transaction(watcher, withdraw)

    # When the cycle comes to set it aside (it waits for the row), and the withdrawal commits
    cycle = started(matching_cycle_run)
    waits(watcher, cycle, "transactionid", "tuple")
    go.set()
    withdraw.done()
    cycle.done()

    # Then the withdrawn offer is not set aside and its seller is not told to amend or
    # withdraw it
    doomed.refresh_from_db()
    assert (doomed.state, doomed.set_aside_at) == (Offer.State.WITHDRAWN, None)
    assert set_aside_notes(seller) == 0
    matching_cycle_run()
    assert best_offers_verify().clean


def test_an_amend_under_way_when_the_cycle_sets_its_bid_aside(watcher):
    # Given a bid whose stored text broke, which its buyer amends in a transaction not yet
    # committed (its row and the buyer's held)
    market = pencils_market()
    buyer = UserFactory()
    offer = offer_publish(seller=UserFactory(), market=market, constraint=OFFER)
    bid = bid_place(buyer=buyer, market=market, constraint="lot = 5 AND price <= 1.50")
    matching_cycle_run()
    Bid.objects.filter(pk=bid.pk).update(constraint_text=BROKEN)
    OrderChange.objects.create(side="bid", order_id=bid.pk)
    go = threading.Event()
    amend = started(
        _held_open(
            lambda: bid_amend(
                buyer=buyer, bid_id=bid.pk, constraint="lot = 5 AND price <= 1.80", version=1
            ),
            go,
        )
    )
    idle_in_transaction(watcher, amend)

    # When the cycle comes to set it aside (it waits for the row), and the amend commits
    cycle = started(matching_cycle_run)
    waits(watcher, cycle, "transactionid", "tuple")
    go.set()
    amend.done()
    cycle.done()

    # Then the cycle matched the new text: nothing set aside, the bid is the best at 1.80
    bid.refresh_from_db()
    assert (bid.version, bid.set_aside_at) == (2, None)
    assert set_aside_notes(buyer) == 0
    best = BestOffer.objects.get(offer=offer)
    assert (best.bid_id, best.value) == (bid.pk, Decimal("1.80"))
    matching_cycle_run()
    assert best_offers_verify().clean
