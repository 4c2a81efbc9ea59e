from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from tests.livestack import ROOT, LiveStack

ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def live_stack(django_db_setup, django_db_blocker) -> LiveStack:
    """uvicorn and the Celery workers (matching, other tasks), started as ops/run starts
    them, on the test database."""
    from django.db import connection

    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    run = os.environ.get("INTERSECT_TEST_RUN", str(os.getpid()))
    stack = LiveStack(database_name=name, log_dir=Path(ARTIFACTS / "logs" / f"run-{run}"))
    try:
        stack.start_server()
        stack.start_workers()
        yield stack
    finally:
        stack.stop()


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
    import psycopg
    from django.db import connection

    from exchange.services.matching import CYCLE_LOCK

    try:
        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        _flush_guard = psycopg.connect(**params, autocommit=True)
        _flush_guard.execute("SELECT pg_advisory_lock(%s)", [CYCLE_LOCK])
    except Exception:  # noqa: BLE001 - without the guard the flush runs as before
        _release_flush_guard()


@pytest.fixture(autouse=True)
def _flush_guard_released():
    _release_flush_guard()
    yield


@pytest.fixture(scope="session", autouse=True)
def _flush_guard_at_exit():
    yield
    _release_flush_guard()
