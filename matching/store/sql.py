"""Small SQL helpers shared by the PostgreSQL strategies: names, COPY, counters."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import psycopg

from .base import StoreError

_NAMESPACE_RE = re.compile(r"[a-z_][a-z0-9_]{0,62}\Z")

# Schemas a store must never be created in, let alone dropped.
_FORBIDDEN = {"public", "information_schema"}


def check_namespace(name: str) -> str:
    """A namespace name the store may own: lower-case, a valid identifier, not a system one.

    Restricting names to ``[a-z_][a-z0-9_]*`` lets them appear in SQL double-quoted
    without any escaping.
    """
    if not isinstance(name, str) or not _NAMESPACE_RE.match(name):
        raise StoreError(
            f"a store namespace is a lower-case identifier such as scratch_1, not {name!r}"
        )
    if name in _FORBIDDEN or name.startswith("pg_"):
        raise StoreError(f"{name!r} is a system schema and cannot hold a constraint store")
    return name


def copy_rows(
    cur: psycopg.Cursor[Any], table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """Write rows with ``COPY ... FROM STDIN`` (text format, values adapted by psycopg)."""
    with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def bump_counters(
    cur: psycopg.Cursor[Any],
    table: str,
    key_columns: Sequence[str],
    deltas: Mapping[tuple[Any, ...], int],
    *,
    keep_zero: bool = False,
) -> None:
    """Add ``deltas`` to the ``n`` column of a counter table keyed by ``key_columns``.

    Keys are updated in sorted order, so two writers never wait for each other in a
    cycle; rows that fall to zero are removed so that the table lists only what is
    present (kept with ``keep_zero``: see ``RangeStore.defer_counters``).
    """
    changes = sorted((k, d) for k, d in deltas.items() if d)
    if not changes:
        return
    columns = ", ".join(key_columns)
    arrays = ", ".join("%s::text[]" for _ in key_columns)
    params = [[k[i] for k, _ in changes] for i in range(len(key_columns))]
    params.append([d for _, d in changes])
    cur.execute(
        f"""
        INSERT INTO {table} AS t ({columns}, n)
        SELECT * FROM unnest({arrays}, %s::int8[])
        ON CONFLICT ({columns}) DO UPDATE SET n = t.n + EXCLUDED.n
        """,
        params,
    )
    if not keep_zero and any(d < 0 for _, d in changes):
        cur.execute(f"DELETE FROM {table} WHERE n <= 0")


def insert_new_counters(
    cur: psycopg.Cursor[Any],
    table: str,
    key_columns: Sequence[str],
    deltas: Mapping[tuple[Any, ...], int],
) -> dict[tuple[Any, ...], int]:
    """Insert the keys of ``deltas`` that have no row yet, with their delta, without
    touching (or locking) the rows that exist; returns the deltas left for those."""
    changes = sorted((k, d) for k, d in deltas.items() if d)
    if not changes:
        return {}
    columns = ", ".join(key_columns)
    arrays = ", ".join("%s::text[]" for _ in key_columns)
    params = [[k[i] for k, _ in changes] for i in range(len(key_columns))]
    params.append([d for _, d in changes])
    cur.execute(
        f"INSERT INTO {table} ({columns}, n) SELECT * FROM unnest({arrays}, %s::int8[])"
        f" ON CONFLICT ({columns}) DO NOTHING RETURNING {columns}",
        params,
    )
    inserted = {tuple(row) for row in cur.fetchall()}
    return {k: d for k, d in changes if k not in inserted}
