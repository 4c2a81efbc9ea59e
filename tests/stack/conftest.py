import contextlib

import pytest

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


def _hold_flush_guard() -> None:
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


@pytest.fixture
def clean_engine(transactional_db):
    """Committed tests share the engine's stores: empty them before each such test (Django's
    flush only truncates Django's own tables)."""
    from django.db import transaction

    from exchange import engine

    def empty():
        with transaction.atomic():
            for name in engine.STRATEGIES:
                store = engine.store(name)
                store.drop()
                store.create()

    empty()
    yield
    empty()
    _hold_flush_guard()
