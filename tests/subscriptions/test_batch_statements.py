"""An engine batch's fixed cost (issue 35, item 7): at 50 events a second each event is a
batch of its own, so what a batch sends to PostgreSQL whatever it finds is the engine's
cost. A live batch sends a fixed number of statements, whatever the number of
subscriptions or notifications: the log's end with the events (one statement), then one
transaction on a pipeline (``BEGIN``, the leases with the cursor, the notified rows locked by
lengthening their outboxes, the notifications, ``COMMIT``). The statements are counted at the driver,
every ``execute`` of every psycopg cursor (Django's included).

These tests run outside a test transaction (``transaction=True``), as a process does: the
batch's ``BEGIN`` and ``COMMIT`` are its own (inside a transaction of Django's they are a
savepoint), so a failure in the middle must roll back the batch alone."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection, transaction

from exchange.models import Subscription, SubscriptionNotification, SubscriptionPartition
from exchange.services import events as event_service
from exchange.services import subscriptions as service
from exchange.services.subscriptions import subscription_create
from exchange.subscription_engine import engine as engine_module
from exchange.subscription_engine.engine import Engine
from exchange.subscription_engine.leases import Beat, leases_upkeep
from tests.conftest import live_engines_stop
from tests.exchange.test_lock_order import idle_in_transaction, started, waits, watcher
from tests.factories import UserFactory
from tests.subscriptions.log import PENCILS, append, outbox, trade

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["watcher"]  # the fixture, imported for these tests

# A batch's statements when it writes notifications: the read; BEGIN, the leases, the rows
# locked by lengthening their outboxes (``NOTIFIED_ROWS``), the notifications, COMMIT.
WRITING = 6
# When it writes none: the read; BEGIN, the leases (their cursor), COMMIT.
QUIET = 4


@pytest.fixture(autouse=True)
def no_wake_ups(monkeypatch):
    monkeypatch.setattr(service, "subscriptions_advance_request", lambda: None)
    monkeypatch.setattr(service, "subscriptions_changed_request", lambda: None)
    monkeypatch.setattr(event_service, "subscriptions_advance_request", lambda: None)


@contextmanager
def statements() -> Iterator[list[str]]:
    """Every statement sent to PostgreSQL inside the block, by any psycopg cursor."""
    sent: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(self, query, *args, **kwargs):
        sent.append(" ".join(str(query).split()[:3]))
        return execute(self, query, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]


def live(count: int) -> tuple[Engine, list[Subscription]]:
    """``count`` form 1 subscriptions that each fire on every trade, and an engine that holds
    them live, its upkeep and rescans behind it (its clock stands still)."""
    live_engines_stop()
    owner = UserFactory()
    query = f"SELECT price WHERE type = 'trade', subject = '{PENCILS}'"
    subs = [subscription_create(owner=owner, query=query) for _ in range(count)]
    engine = Engine(
        "batch",
        lease_seconds=600,
        checkpoint_events=10**9,
        checkpoint_seconds=10**9,
        clock=lambda: 0.0,
    )
    while engine.step():
        pass
    assert len(engine.subs) == count
    return engine, subs


@pytest.mark.parametrize("count", [1, 40])
def test_a_live_batch_sends_the_same_statements_whatever_it_writes(count):
    engine, subs = live(count)

    # When one event comes that every subscription notifies
    append([trade("1.10")])
    with statements() as sent:
        assert engine.step() is False
    # Then the batch sent its fixed statements, one INSERT for every notification
    assert len(sent) == WRITING, sent
    assert [outbox(sub) for sub in subs] == [
        [{"n": 1, "seq": 1, "data": {"price": "1.10"}}]
    ] * count
    assert set(SubscriptionPartition.objects.values_list("cursor", flat=True)) == {1}

    # When nothing comes, the batch reads the log's end and writes nothing (no transaction)
    with statements() as sent:
        assert engine.step() is False
    assert len(sent) == 1, sent


def test_a_batch_that_notifies_no_one_moves_its_cursor_in_one_trip():
    engine, subs = live(3)
    append([trade("1.10", subject="office.supplies.paper")])
    with statements() as sent:
        engine.step()
    assert len(sent) == QUIET, sent
    assert [outbox(sub) for sub in subs] == [[]] * 3
    assert set(SubscriptionPartition.objects.values_list("cursor", flat=True)) == {1}


def test_a_batch_whose_write_fails_is_rolled_back_alone(monkeypatch):
    engine, subs = live(2)
    append([trade("1.10")])
    write = engine_module._write

    def broken(*args, **kwargs):
        write(*args, **kwargs)  # the notifications and rows sent, not committed
        raise RuntimeError("the process died")

    monkeypatch.setattr(engine_module, "_write", broken)
    with pytest.raises(RuntimeError):
        engine.step()
    monkeypatch.undo()
    # Then nothing of the batch is written, and the connection is usable outside a
    # transaction (Django's autocommit)
    assert SubscriptionNotification.objects.count() == 0
    assert set(Subscription.objects.values_list("last_n", flat=True)) == {0}
    assert set(SubscriptionPartition.objects.values_list("cursor", flat=True)) == {0}
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    # and the next batch does the work once
    while engine.step():
        pass
    assert [outbox(sub) for sub in subs] == [[{"n": 1, "seq": 1, "data": {"price": "1.10"}}]] * 2


def test_a_batch_whose_statement_fails_in_the_pipeline_is_rolled_back(monkeypatch):
    engine, subs = live(2)
    first, second = sorted(subs, key=lambda s: s.pk)
    # Given a notification the engine does not know of in the first's outbox (written behind
    # its back: its row's last_n still 0), so that the batch's INSERT fails
    SubscriptionNotification.objects.create(subscription=first, n=1, seq=None, data={})
    append([trade("1.10")])
    with pytest.raises(psycopg.errors.UniqueViolation):
        engine.step()
    # Then the second's notification is not written either: the batch is one transaction
    assert outbox(second) == []
    assert set(SubscriptionPartition.objects.values_list("cursor", flat=True)) == {0}
    assert connection.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    # and once the stray row is gone the batch is done once
    SubscriptionNotification.objects.filter(subscription=first).delete()
    while engine.step():
        pass
    assert [outbox(sub) for sub in (first, second)] == [
        [{"n": 1, "seq": 1, "data": {"price": "1.10"}}]
    ] * 2


def changed_while_a_batch_commits(watcher, change) -> None:
    """``change`` made in a session of its own and held uncommitted; the engine's batch in
    another until it waits for the row's lock; ``change`` committed; the batch done."""
    release = threading.Event()

    def other():
        with transaction.atomic():
            change()
            release.wait(30)

    holder = started(other)
    idle_in_transaction(watcher, holder)
    engine_step = started(lambda: ENGINE[0].step())
    waits(watcher, engine_step, "transactionid", "tuple")
    release.set()
    holder.done()
    engine_step.done()


ENGINE: list[Engine] = []  # the engine ``changed_while_a_batch_commits`` steps


@pytest.fixture
def engine_held():
    yield ENGINE
    ENGINE.clear()


def test_a_deletion_committed_while_a_batch_waits_for_the_row_gets_nothing(watcher, engine_held):
    # Given two live subscriptions, then a trade each notifies on
    engine, subs = live(2)
    kept, deleted = sorted(subs, key=lambda s: s.pk)
    engine_held.append(engine)
    append([trade("1.10")])
    # When the second is deleted in another session while the batch commits (the batch's
    # row lock waits for the deletion's)
    changed_while_a_batch_commits(
        watcher,
        lambda: service.subscription_delete(owner=deleted.owner, subscription_id=deleted.pk),
    )
    # Then the deleted one got nothing, its outbox's length untouched; the other its one
    assert outbox(deleted) == []
    assert (deleted.state, deleted.reason, deleted.last_n) == ("done", "deleted", 0)
    assert outbox(kept) == [{"n": 1, "seq": 1, "data": {"price": "1.10"}}]
    assert kept.last_n == 1
    # and the next trade notifies the other alone, once
    append([trade("1.20")])
    while engine.step():
        pass
    assert outbox(deleted) == []
    assert [note["n"] for note in outbox(kept)] == [1, 2]
    assert deleted.pk not in engine.followed


def test_a_pause_committed_while_a_batch_waits_keeps_the_batch_and_resumes_after_it(
    watcher, engine_held
):
    # Given two live subscriptions, then a trade each notifies on
    engine, subs = live(2)
    kept, paused = sorted(subs, key=lambda s: s.pk)
    engine_held.append(engine)
    append([trade("1.10")])
    # When the second is paused in another session while the batch commits
    changed_while_a_batch_commits(
        watcher,
        lambda: service.subscription_pause(owner=paused.owner, subscription_id=paused.pk),
    )
    # Then the batch's notification is its (its event came before the pause committed),
    # checkpointed with it: nothing more is owed
    assert outbox(paused) == [{"n": 1, "seq": 1, "data": {"price": "1.10"}}]
    assert (paused.state, paused.last_n, paused.checkpoint_n, paused.cursor) == (
        "paused",
        1,
        1,
        1,
    )
    assert paused.pk not in engine.followed
    # and once resumed, the trade of the pause comes once, numbered on
    append([trade("1.20")])
    while engine.step():
        pass
    service.subscription_resume(owner=paused.owner, subscription_id=paused.pk)
    engine.changed = True
    while engine.step():
        pass
    expected = [
        {"n": 1, "seq": 1, "data": {"price": "1.10"}},
        {"n": 2, "seq": 2, "data": {"price": "1.20"}},
    ]
    assert outbox(paused) == outbox(kept) == expected


def test_an_upkeep_does_not_wait_for_another_processs_batch(watcher):
    """Every batch updates its partitions' lease rows; an upkeep ensuring every partition
    has a row waited for such a batch to end (an INSERT meeting a row being updated in the
    unique index waits for the updater)."""
    live_engines_stop()
    upkeep = functools.partial(
        leases_upkeep, held=set(), count=8, lease_seconds=600, log_end=0, beat=Beat(0, 0, 0)
    )
    upkeep(name="a")  # the rows exist, a holds them
    release = threading.Event()

    def batch_under_way():  # as a's commit holds its lease rows
        with transaction.atomic():
            SubscriptionPartition.objects.filter(partition=0).update(cursor=1)
            release.wait(30)

    holder = started(batch_under_way)
    idle_in_transaction(watcher, holder)
    # When b's upkeep runs meanwhile
    other = started(lambda: upkeep(name="b"))
    waited = False
    while other.is_alive() and not waited:
        row = watcher.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [other.pid]
        ).fetchone()
        waited = row is not None and row[0] == "Lock"
        time.sleep(0.01)
    release.set()
    holder.done()
    # Then it ended without waiting for a's batch (it claims nothing: a's leases hold)
    assert other.done() == (set(), set())
    assert not waited
