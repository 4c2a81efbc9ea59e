from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.core.management.color import no_style
from django.db import OperationalError, connection, connections
from django.test import TransactionTestCase

from exchange.collector import collector_settle
from exchange.redis_clients import redis_client
from exchange.services.matching import CYCLE_LOCK
from tests.livestack import ROOT, LiveStack

ARTIFACTS = ROOT / "test-artifacts"


def pytest_collection_finish(session: pytest.Session) -> None:
    """The test process is long-lived too, and settles its collector as a matching worker's
    does (``exchange/collector.py``) once everything it keeps is loaded: collection imported
    every test module, Django, hypothesis' strategies and schemathesis' schemas, and each
    full collection walked all of that again. ``tests/matching`` spent 28% of its time in
    the collector (``gc.callbacks``: 54 s of 192 s on the shared machine, 108 full
    collections of 0.4 s), and a fifth of that after the settle. What is garbage now is
    collected first: a frozen object is never collected."""
    gc.collect()
    collector_settle()


@contextlib.contextmanager
def collector_kept() -> Iterator[None]:
    """For a test that changes the collector's settings or unfreezes its objects: the
    thresholds as before the block, and what is alive after it frozen again if the process
    had settled (``pytest_collection_finish``), so that the rest of the run keeps the
    settle's saving."""
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count() > 0
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if frozen:
            gc.collect()
            gc.freeze()


# The session's live stack, once started (``live_engines_stop`` reaches its engines).
_session_stack: LiveStack | None = None


@pytest.fixture(scope="session")
def live_stack(django_db_setup, django_db_blocker) -> LiveStack:
    """The web tier (one HTTP process and ``SOCKET_WORKERS`` socket processes), the Celery
    workers (matching, other tasks) and the subscription engine, started as ops/run starts
    them, on the test database."""
    global _session_stack
    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    run = os.environ.get("INTERSECT_TEST_RUN", str(os.getpid()))
    stack = LiveStack(database_name=name, log_dir=Path(ARTIFACTS / "logs" / f"run-{run}"))
    try:
        stack.start_server()
        stack.start_workers()
        _wait_beats(stack, _engine_names(stack))
        _session_stack = stack
        yield stack
    finally:
        _session_stack = None
        stop_together(stack)


def stop_together(stack: LiveStack) -> None:
    """``stack.stop()``, every process at once: each is given its SIGTERM and up to 20 s
    to exit (``Process.stop``), and one after the other those waits added up (about 6 s
    at the end of a run, more on a loaded machine)."""
    processes = list(stack.processes.values())
    if processes:
        with ThreadPoolExecutor(max_workers=len(processes)) as pool:
            for stopped in [pool.submit(process.stop) for process in processes]:
                stopped.result()
    stack.processes.clear()


def _engine_names(stack: LiveStack) -> list[str]:
    return [f"{name}-{os.getpid()}" for name in stack.processes if name.startswith("engine")]


def live_engines_stop() -> None:
    """Stop the session stack's subscription engine processes, if it runs any: a test that
    drives an engine of its own (``tests/subscriptions/log.py``, a stack of its own) must be
    the only one holding the partitions. A clean stop gives them back at once; the next
    test that uses the live stack starts the processes again (``_live_engines``)."""
    if _session_stack is None:
        return
    names = _engine_names(_session_stack)
    for name in [name for name in _session_stack.processes if name.startswith("engine")]:
        _session_stack.processes.pop(name).stop()
    if names:  # their next start must beat afresh (``_wait_beats``)
        redis_client().zrem(settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY, *names)


@pytest.fixture(autouse=True)
def _live_engines(request):
    """Before a test that uses the live stack: its engine processes, if a test stopped them."""
    stack = _session_stack
    if (
        stack is not None
        and "live_stack" in request.fixturenames
        and not any(name.startswith("engine") for name in stack.processes)
    ):
        stack.start_subscription_engines()
        _wait_beats(stack, _engine_names(stack))
    yield
    if "tests.subscriptions.log" in sys.modules:  # the test's own engine (its helpers)
        sys.modules["tests.subscriptions.log"].engine_forget()
        # Before pytest-django drops the test database, which a held guard's session would
        # keep from being dropped (a run that ends on a committed test left it behind).
        _release_flush_guard()


def _wait_beats(stack: LiveStack, names: list[str]) -> None:
    """Until the engine processes ``names`` beat in Redis (``/healthz`` counts them up)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        key = settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY
        if all(redis_client().zscore(key, name) for name in names):
            return
        time.sleep(0.2)
    raise RuntimeError(
        "the subscription engines did not beat:\n" + stack.processes["engine0"].tail()
    )


# A connection that holds the cycle lock from the end of a committed test until the start of
# the next one, so that the live worker does not run a cycle while pytest-django truncates the
# tables (TRUNCATE against a cycle's reads can deadlock and leave the database unflushed).
_flush_guard = None


def _release_flush_guard() -> None:
    global _flush_guard
    if _flush_guard is not None:
        # Closing the session releases its advisory lock; a dead one holds none either.
        with contextlib.suppress(Exception):
            _flush_guard.close()
        _flush_guard = None


def hold_flush_guard() -> None:
    global _flush_guard

    try:
        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        _flush_guard = psycopg.connect(**params, autocommit=True)
        _flush_guard.execute("SELECT pg_advisory_lock(%s)", [CYCLE_LOCK])
    except Exception:  # without the guard the flush runs as before
        _release_flush_guard()


@pytest.fixture(autouse=True)
def _flush_guard_released():
    _release_flush_guard()
    yield


@pytest.fixture(scope="session", autouse=True)
def _flush_guard_at_exit():
    yield
    _release_flush_guard()


# Tables a committed test's flush leaves alone: what ``migrate`` wrote once for the whole run
# (the content types and the permissions of every model). No test changes them.
KEPT_BY_FLUSH = frozenset({"django_content_type", "auth_permission"})


# How often a flush that PostgreSQL chose as a deadlock's victim is tried again.
FLUSH_ATTEMPTS = 5


def flush_retrying(connection, statements: list[str]) -> int:
    """Run the flush's statements (one ``TRUNCATE`` of every table), again if PostgreSQL
    aborts it to break a deadlock; returns the attempts it took (``deadlocks_retried``)."""
    return deadlocks_retried(lambda: connection.ops.execute_sql_flush(statements))


def deadlocks_retried(empty: Callable[[], object]) -> int:
    """Run ``empty`` (a transaction of ``TRUNCATE``s), again if PostgreSQL aborts it to break
    a deadlock; returns the attempts it took. The session stack's matching workers and
    subscription engines keep running between tests, and a ``TRUNCATE`` takes its tables'
    locks one by one: a batch or a cycle holding one table's rows while it waits for another
    can close a cycle with it (Django's flush; the engine stores' emptying, which failed a
    gate so, ``tests/stack/conftest.py``). The aborted transaction changed nothing, and the
    batch that won commits or rolls back in milliseconds, so the next attempt finds the way
    clear. One that fails otherwise, or every time, raises as before."""
    for attempt in range(1, FLUSH_ATTEMPTS + 1):
        try:
            empty()
            return attempt
        except OperationalError as error:
            if attempt == FLUSH_ATTEMPTS or not isinstance(
                error.__cause__, psycopg.errors.DeadlockDetected
            ):
                raise
            time.sleep(0.05 * attempt)
    raise AssertionError("unreachable")


@pytest.fixture(scope="session", autouse=True)
def _flush_keeps_static_rows():
    """``TransactionTestCase``'s flush after a committed test, without the ``post_migrate``
    signal. Django's flush empties every table, then that signal writes the content types and
    permissions again, which took longer than the TRUNCATE itself (about 0.4 s a test on the
    shared machine, for each of the 150 or so committed tests). Here those two tables are not
    emptied, so there is nothing to write again, and their ids stay the ones the live stack's
    processes have cached. Test cases with ``available_apps`` or a serialized rollback keep
    Django's own flush."""
    django_flush = TransactionTestCase._fixture_teardown

    def flush(self) -> None:
        if self.available_apps is not None or self.serialized_rollback:
            django_flush(self)
            return
        for db_name in self._databases_names(include_mirrors=False):
            connection = connections[db_name]
            tables = connection.introspection.django_table_names(
                only_existing=True, include_views=False
            )
            kept = [name for name in tables if name not in KEPT_BY_FLUSH]
            flush_retrying(
                connection, connection.ops.sql_flush(no_style(), kept, reset_sequences=False)
            )

    TransactionTestCase._fixture_teardown = flush
    yield
    TransactionTestCase._fixture_teardown = django_flush
