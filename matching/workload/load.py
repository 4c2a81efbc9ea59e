"""Loading a workload directory into a constraint store, timing each phase.

``load_workload`` creates the store's namespace and hands both files to the store's
``bulk_load`` (``COPY``, then the indexes of each side built over all its rows, then
``VACUUM (ANALYZE)``). The phases of seed 000's Figure 4 are told apart without
changing the store: the time spent decoding the text is measured in the iterator the
store consumes, the time spent writing in the store's per-side write step, the
statistics in its ``analyze``; what remains of ``bulk_load`` is index creation (the
DROP/CREATE INDEX statements and the commit).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from matching.store import DatabaseStore, open_store

from .files import Item, iter_items, read_manifest, workload_of
from .parameters import Workload


@dataclass
class Loaded:
    """Counts and seconds of one load. ``seconds`` keys: ``decode_pubs``,
    ``copy_pubs``, ``decode_subs``, ``copy_subs``, ``indexes``, ``statistics``,
    ``total``."""

    workload: Workload
    strategy: str
    namespace: str
    counts: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


class _Timed:
    """An iterator that adds the time spent producing its items to ``seconds``."""

    def __init__(self, items: Iterable[Item]) -> None:
        self._items = iter(items)
        self.seconds = 0.0
        self.count = 0

    def __iter__(self) -> Iterator[Item]:
        return self

    def __next__(self) -> Item:
        started = time.perf_counter()
        try:
            item = next(self._items)
        finally:
            self.seconds += time.perf_counter() - started
        self.count += 1
        return item


def timed_bulk_load(
    store: DatabaseStore,
    *,
    publications: Iterable[Item] = (),
    subscriptions: Iterable[Item] = (),
) -> dict[str, float]:
    """``store.bulk_load`` with its phases timed (see the module docstring)."""
    sources = {"pub": _Timed(publications), "sub": _Timed(subscriptions)}
    spent = {"write_pub": 0.0, "write_sub": 0.0, "statistics": 0.0}
    write, analyze = store._write, store.analyze

    def timed_write(cur: psycopg.Cursor[Any], side: str, items: Iterable[Item]) -> int:
        started = time.perf_counter()
        try:
            return write(cur, side, items)  # type: ignore[arg-type]  # side is pub or sub: the store calls it
        finally:
            spent[f"write_{side}"] += time.perf_counter() - started

    def timed_analyze() -> None:
        started = time.perf_counter()
        try:
            analyze()
        finally:
            spent["statistics"] += time.perf_counter() - started

    # Instance attributes shadow the methods for this one call only.
    store._write = timed_write  # type: ignore[method-assign]  # timed for this load only, see above
    store.analyze = timed_analyze  # type: ignore[method-assign]  # as above
    started = time.perf_counter()
    try:
        store.bulk_load(publications=sources["pub"], subscriptions=sources["sub"])
    finally:
        total = time.perf_counter() - started
        del store._write, store.analyze
    seconds = {
        "decode_pubs": sources["pub"].seconds,
        "copy_pubs": spent["write_pub"] - sources["pub"].seconds,
        "decode_subs": sources["sub"].seconds,
        "copy_subs": spent["write_sub"] - sources["sub"].seconds,
        "statistics": spent["statistics"],
    }
    seconds["indexes"] = total - spent["write_pub"] - spent["write_sub"] - spent["statistics"]
    seconds["total"] = total
    return seconds


def load_workload(
    conn: psycopg.Connection[Any] | str,
    directory: Path | str,
    *,
    strategy: str,
    namespace: str,
    replace: bool = False,
) -> Loaded:
    """Create the store ``namespace`` and bulk-load the workload in ``directory`` into it.

    ``conn`` should be in autocommit mode (a conninfo string opens one) so that the
    statistics step can VACUUM. With ``replace`` an existing store of that name is
    dropped first; otherwise an existing namespace is an error (``StoreError``).
    """
    w = workload_of(read_manifest(directory))
    store = open_store(conn, strategy=strategy, namespace=namespace)
    if not isinstance(store, DatabaseStore):
        raise ValueError(f"{strategy} is not a PostgreSQL strategy")
    try:
        if replace:
            store.drop()
        store.create()
        seconds = timed_bulk_load(
            store,
            publications=iter_items(directory, "pubs"),
            subscriptions=iter_items(directory, "subs"),
        )
        with store.cursor() as cur:
            counts = {}
            for side in ("pub", "sub"):
                cur.execute(f"SELECT count(DISTINCT id) FROM {store.master(side)}")
                counts[f"{side}s"] = int(cur.fetchone()[0])  # type: ignore[index]  # count() returns one row
    finally:
        store.close()
    return Loaded(w, strategy, namespace, counts, seconds)
