"""The PostgreSQL constraint store and its match strategies (SPEC 4).

``open_store(conn, strategy="range", namespace="scratch_1")`` returns a
``ConstraintStore`` living in its own PostgreSQL schema; ``create()`` it once, add
publications and subscriptions, and match. Strategies:

* ``paper``: the design of seed 000 (``paper.py``);
* ``range``: range and box values, GiST and B-tree joins, shapes for wildcards
  (``ranges.py``);
* ``memory``: the plain-Python oracle, no database (``memory.py``).

Nothing here imports Django; a store takes a psycopg 3 connection or a conninfo
string (``postgresql://...`` or ``dbname=...``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from .base import ConstraintStore, DisjunctPair, Item, Pair, StoreError, StoreLimitError, pairs_of
from .database import DatabaseStore
from .encode import LIMITS, check_storable
from .memory import MemoryStore
from .paper import PaperStore
from .ranges import RangeStore

DATABASE_STRATEGIES: dict[str, type[DatabaseStore]] = {
    "paper": PaperStore,
    "range": RangeStore,
}

STRATEGIES: tuple[str, ...] = (*DATABASE_STRATEGIES, "memory")


def open_store(
    conn: psycopg.Connection[Any] | str | None = None,
    *,
    strategy: str,
    namespace: str = "",
) -> ConstraintStore:
    """A store of the given strategy in ``namespace`` (which ``create()`` makes).

    ``conn`` is a psycopg connection the caller keeps (and whose transactions it
    owns), or a conninfo string, in which case the store opens an autocommit
    connection and closes it in ``close()``. ``memory`` needs neither.
    """
    if strategy == "memory":
        return MemoryStore()
    factory: Callable[..., DatabaseStore] | None = DATABASE_STRATEGIES.get(strategy)
    if factory is None:
        raise StoreError(f"unknown strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    if conn is None:
        raise StoreError(f"the {strategy} strategy needs a database connection")
    if isinstance(conn, str):
        owned = psycopg.connect(conn, autocommit=True)
        try:
            return factory(owned, namespace, owns_connection=True)
        except BaseException:
            owned.close()
            raise
    return factory(conn, namespace)


__all__ = [
    "DATABASE_STRATEGIES",
    "LIMITS",
    "STRATEGIES",
    "ConstraintStore",
    "DatabaseStore",
    "DisjunctPair",
    "Item",
    "MemoryStore",
    "Pair",
    "PaperStore",
    "RangeStore",
    "StoreError",
    "StoreLimitError",
    "check_storable",
    "open_store",
    "pairs_of",
]
