"""An engine batch's fixed cost (issue 35, item 7): at 50 events a second each event is a
batch of its own, so what a batch sends to PostgreSQL whatever it finds is the engine's
cost. A live batch sends a fixed number of statements, whatever the number of
subscriptions or notifications: the log's end with the events (one statement), then one
transaction on a pipeline (``BEGIN``, the leases with the cursor, the rows locked, the
notifications, the outboxes' lengths, ``COMMIT``). The statements are counted at the driver,
every ``execute`` of every psycopg cursor (Django's included).

These tests run outside a test transaction (``transaction=True``), as a process does: the
batch's ``BEGIN`` and ``COMMIT`` are its own (inside a transaction of Django's they are a
savepoint), so a failure in the middle must roll back the batch alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection

from exchange.models import Subscription, SubscriptionNotification, SubscriptionPartition
from exchange.services import events as event_service
from exchange.services import subscriptions as service
from exchange.services.subscriptions import subscription_create
from exchange.subscription_engine import engine as engine_module
from exchange.subscription_engine.engine import Engine
from tests.conftest import live_engines_stop
from tests.factories import UserFactory
from tests.subscriptions.log import PENCILS, append, outbox, trade

pytestmark = pytest.mark.django_db(transaction=True)

# A batch's statements when it writes notifications: the read; BEGIN, the leases, the rows,
# the notifications, their rows' last_n, COMMIT.
WRITING = 7
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
