"""The flush between committed tests survives a deadlock with a process that keeps running."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import OperationalError, connection

from tests.conftest import flush_retrying

TABLES = ("flush_probe_first", "flush_probe_second")


@pytest.fixture
def probe_tables(transactional_db):
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"CREATE TABLE {table} (n integer)")
            cursor.execute(f"INSERT INTO {table} VALUES (1)")
    yield
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")


def other_session() -> psycopg.Connection:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params)


def deadlocking_batch(ready: threading.Event, locked: threading.Event) -> threading.Thread:
    """A transaction that holds the second table, waits until the flush holds the first and
    then asks for it: a lock cycle. PostgreSQL breaks it in the session that has waited
    ``deadlock_timeout`` first, the flush, by aborting its statement."""

    def run() -> None:
        with other_session() as other:
            other.execute(f"LOCK TABLE {TABLES[1]} IN ACCESS SHARE MODE")
            ready.set()
            locked.wait(10)
            other.execute(f"SELECT count(*) FROM {TABLES[0]}")
            other.commit()

    return threading.Thread(target=run)


def flush_waits_for_the_second_table(locked: threading.Event) -> None:
    """Set ``locked`` once this database's flush is waiting on a lock (it holds the first)."""

    def watch() -> None:
        with other_session() as watcher:
            for _ in range(1000):
                waiting = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock' AND query LIKE 'TRUNCATE%%'"
                ).fetchone()
                watcher.rollback()
                if waiting and waiting[0]:
                    locked.set()
                    return
                threading.Event().wait(0.01)

    threading.Thread(target=watch, daemon=True).start()


def test_a_flush_aborted_by_a_deadlock_is_run_again_and_empties_the_tables(probe_tables):
    ready, locked = threading.Event(), threading.Event()
    batch = deadlocking_batch(ready, locked)
    batch.start()
    ready.wait(10)
    flush_waits_for_the_second_table(locked)
    statement = f"TRUNCATE {', '.join(TABLES)}"

    attempts = flush_retrying(connection, [statement])
    batch.join(10)

    assert attempts == 2
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"SELECT count(*) FROM {table}")
            assert cursor.fetchone() == (0,)


def test_a_flush_that_fails_otherwise_raises_at_once(transactional_db):
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '1ms'")
    try:
        with pytest.raises(OperationalError) as raised, other_session() as other:
            other.execute("LOCK TABLE django_session IN ACCESS EXCLUSIVE MODE")
            flush_retrying(connection, ["TRUNCATE django_session"])
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert isinstance(raised.value.__cause__, psycopg.errors.LockNotAvailable)
