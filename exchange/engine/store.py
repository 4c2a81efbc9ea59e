"""Which constraint store the exchange uses, opened on Django's connection.

The store lives in the exchange's own database, in a PostgreSQL schema per strategy
(``engine_range``, ``engine_paper``), and works on the connection of the current
transaction, so a cycle's store changes commit or roll back with its rows.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection

from matching.store import ConstraintStore, open_store

STRATEGIES = ("range", "paper")


def strategy() -> str:
    return settings.MATCHING_STRATEGY


def namespace(name: str | None = None) -> str:
    return f"engine_{name or strategy()}"


def store(name: str | None = None) -> ConstraintStore:
    """The engine's constraint store, on the current transaction's connection."""
    connection.ensure_connection()
    return open_store(connection.connection, strategy=name or strategy(), namespace=namespace(name))


def scratch_store(name: str, scratch_namespace: str, *, indexes: bool = True) -> ConstraintStore:
    """A fresh, empty store of strategy ``name`` in its own namespace (drop it when done);
    without ``indexes``, its secondary indexes wait for ``create_indexes()``."""
    connection.ensure_connection()
    scratch = open_store(connection.connection, strategy=name, namespace=scratch_namespace)
    scratch.create(indexes=indexes)
    return scratch
