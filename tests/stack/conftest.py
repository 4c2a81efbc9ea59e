import pytest
from django.db import connection, transaction

from exchange import engine
from tests.conftest import deadlocks_retried, hold_flush_guard

# Each engine store's relations (their oids) as ``clean_engine`` last created them. While a
# store still has exactly these, emptying it is one TRUNCATE of its tables (identities
# restarted): what a drop and create leaves, in a third of the time (0.09 s against 0.25 s
# for both stores, twice for each of the 160 or so committed tests). A store dropped or
# made again since (a migration test, a test of its own) has other oids: made again here.
_created: dict[str, list[int]] = {}


def _relations(namespace: str) -> list[int]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s ORDER BY c.oid",
            [namespace],
        )
        return [oid for (oid,) in cur.fetchall()]


def _truncate(namespace: str) -> None:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT format('%%I.%%I', schemaname, tablename) FROM pg_tables"
            " WHERE schemaname = %s ORDER BY tablename",
            [namespace],
        )
        tables = [name for (name,) in cur.fetchall()]
        cur.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY")


def engine_stores_empty() -> None:
    """Every engine store empty, as a store's ``create`` leaves it; again if a deadlock with
    the session stack's matching worker aborted it (``deadlocks_retried``)."""
    deadlocks_retried(_engine_stores_emptied)


def _engine_stores_emptied() -> None:
    with transaction.atomic():
        for name in engine.STRATEGIES:
            namespace = engine.namespace(name)
            made = _created.get(name)
            if made and _relations(namespace) == made:
                _truncate(namespace)
                continue
            store = engine.store(name)
            store.drop()
            store.create()
            _created[name] = _relations(namespace)


@pytest.fixture
def clean_engine(transactional_db):
    """Committed tests share the engine's stores: empty them before each such test (Django's
    flush only truncates Django's own tables)."""
    engine_stores_empty()
    yield
    engine_stores_empty()
    hold_flush_guard()
