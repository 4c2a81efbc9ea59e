"""What both PostgreSQL strategies share: one schema per store, COPY loading, transactions.

A store lives entirely inside one PostgreSQL schema, its *namespace*: every table,
index and type it creates is qualified with it, and ``drop`` removes the schema.
Nothing outside it is touched, apart from ``CREATE EXTENSION IF NOT EXISTS`` for the
extensions a strategy needs. ``create`` marks the schema with a comment and ``drop``
refuses a schema without that mark, so a store can never drop somebody else's data.

Transactions belong to the caller. On a connection in autocommit mode each public
method runs in a transaction of its own (all or nothing); otherwise it runs inside
the caller's transaction and never commits, so that the caller can, for example,
match and update its own tables atomically.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

import psycopg

from .base import ConstraintStore, Item, StoreError, check_ids
from .sql import check_namespace

Side = Literal["pub", "sub"]
SIDES: tuple[Side, Side] = ("pub", "sub")

MARK = "intersect constraint store"

# Constraints encoded per COPY round: large enough to amortize the statements, small
# enough that the encoded rows of one chunk stay a few megabytes.
CHUNK = 20_000

# Memory for index builds after a bulk load (sorts for B-trees, buffers for GiST).
BUILD_MEMORY = "256MB"


@dataclass(frozen=True)
class Index:
    """A secondary index; ``side`` says which side's bulk load may drop and rebuild it."""

    side: Side | None
    name: str
    columns_sql: str  # everything after ``ON <table>``: ``USING gist (field, val)``
    table: str
    unique: bool = False


def chunked(items: Iterable[Item], size: int = CHUNK) -> Iterator[list[Item]]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


class DatabaseStore(ConstraintStore):
    """A store in one PostgreSQL schema, reached through a psycopg 3 connection."""

    extensions: tuple[str, ...] = ()

    def __init__(
        self, conn: psycopg.Connection[Any], namespace: str, *, owns_connection: bool = False
    ) -> None:
        self.conn = conn
        self.namespace = check_namespace(namespace)
        self._owns_connection = owns_connection

    # -- names ----------------------------------------------------------------------------

    def q(self, name: str) -> str:
        """A table or type name qualified with the store's schema."""
        return f'"{self.namespace}".{name}'

    def master(self, side: Side) -> str:
        return self.q(f"{side}_master")

    # -- what a strategy provides ---------------------------------------------------------

    @abstractmethod
    def _ddl(self) -> list[str]:
        """Statements creating the store's types and tables (no secondary indexes)."""

    @abstractmethod
    def _indexes(self) -> list[Index]:
        """The secondary indexes, created after the tables (and after a bulk load)."""

    @abstractmethod
    def _write(self, cur: psycopg.Cursor[Any], side: Side, items: Iterable[Item]) -> int:
        """Encode and COPY constraints of one side; returns how many were written."""

    @abstractmethod
    def _delete(self, cur: psycopg.Cursor[Any], side: Side, ids: list[int]) -> None:
        """Delete every row of these ids on one side and update the bookkeeping."""

    # -- lifecycle ------------------------------------------------------------------------

    def cursor(self) -> psycopg.Cursor[Any]:
        """A server-side-binding cursor, whatever cursor class the connection defaults to.

        Django's connection, for one, makes client-side-binding cursors; the store's
        COPY, pipelines and array parameters are written for the plain ``Cursor``.
        """
        return psycopg.Cursor(self.conn)

    @contextmanager
    def atomic(self) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor inside a transaction: a new one in autocommit mode, else the caller's."""
        if self.conn.autocommit:
            with self.conn.transaction(), self.cursor() as cur:
                yield cur
        else:
            with self.cursor() as cur:
                yield cur

    def exists(self) -> bool:
        with self.cursor() as cur:
            return self._exists(cur)

    def create(self, *, indexes: bool = True) -> None:
        """Create the schema, its tables and (with ``indexes``) its secondary indexes; the
        namespace must not exist yet. Loading rows works without the secondary indexes
        (``bulk_load`` drops them for it) and matching gives the same answers, only the
        plans differ."""
        with self.atomic() as cur:
            if self._exists(cur):
                raise StoreError(f"the namespace {self.namespace} already exists")
            # Every statement in one round trip (no parameters: psycopg sends the string as
            # one simple query, which may hold many): sent one by one, the sixty-odd statements
            # took about half as long again, and the exchange's verification creates a
            # scratch store at each call.
            statements = [
                # Trusted extensions: a database owner may create them.
                *(f"CREATE EXTENSION IF NOT EXISTS {extension}" for extension in self.extensions),
                f'CREATE SCHEMA "{self.namespace}"',
                f"COMMENT ON SCHEMA \"{self.namespace}\" IS '{MARK} ({self.strategy})'",
                *self._ddl(),
                *(self._index_sql(index) for index in (self._indexes() if indexes else [])),
            ]
            cur.execute(";\n".join(statements))

    def create_indexes(self) -> None:
        with self.atomic() as cur:
            cur.execute(";\n".join(self._index_sql(index) for index in self._indexes()))

    def drop(self) -> None:
        """Drop the schema and all it holds, if it exists and was made by a store."""
        with self.atomic() as cur:
            cur.execute(
                "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = %s",
                [self.namespace],
            )
            row = cur.fetchone()
            if row is None:
                return
            if not (row[0] or "").startswith(MARK):
                raise StoreError(
                    f"the schema {self.namespace} was not created by a constraint store; "
                    "refusing to drop it"
                )
            cur.execute(f'DROP SCHEMA "{self.namespace}" CASCADE')

    def close(self) -> None:
        if self._owns_connection:
            self.conn.close()

    def analyze(self) -> None:
        """Refresh the planner statistics; in autocommit mode also VACUUM.

        VACUUM marks the pages all-visible, which lets the covering indexes answer
        without visiting the tables (index-only scans). It cannot run inside a
        transaction, so on the caller's transaction only ANALYZE runs and autovacuum
        does the rest later.
        """
        with self.cursor() as cur:
            self._analyze(cur, vacuum=self.conn.autocommit)

    def _analyze(self, cur: psycopg.Cursor[Any], *, vacuum: bool = False) -> None:
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", [self.namespace])
        tables = [self.q(name) for (name,) in cur.fetchall()]
        if tables:
            cur.execute(f"{'VACUUM (ANALYZE)' if vacuum else 'ANALYZE'} {', '.join(tables)}")

    def _exists(self, cur: psycopg.Cursor[Any]) -> bool:
        cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [self.namespace])
        return cur.fetchone() is not None

    def _index_sql(self, index: Index) -> str:
        unique = "UNIQUE " if index.unique else ""
        return f"CREATE {unique}INDEX {index.name} ON {index.table} {index.columns_sql}"

    # -- contents -------------------------------------------------------------------------

    def add_publications(self, items: Iterable[Item]) -> int:
        with self.atomic() as cur:
            return self._write(cur, "pub", items)

    def add_subscriptions(self, items: Iterable[Item]) -> int:
        with self.atomic() as cur:
            return self._write(cur, "sub", items)

    def delete_publications(self, ids: Iterable[int]) -> None:
        batch = check_ids(ids)
        if batch:
            with self.atomic() as cur:
                self._delete(cur, "pub", batch)

    def delete_subscriptions(self, ids: Iterable[int]) -> None:
        batch = check_ids(ids)
        if batch:
            with self.atomic() as cur:
                self._delete(cur, "sub", batch)

    def bulk_load(
        self, *, publications: Iterable[Item] = (), subscriptions: Iterable[Item] = ()
    ) -> None:
        """COPY both sides; a side that was empty gets its indexes built after its rows.

        Building an index once over all rows is much cheaper than maintaining it row by
        row. ``analyze`` runs at the end (after the load's own transaction, in
        autocommit mode, so that it can VACUUM as well).
        """
        with self.atomic() as cur:
            cur.execute("SELECT current_setting('maintenance_work_mem')")
            previous = cur.fetchone()[0]  # type: ignore[index]  # current_setting returns one row
            cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", [BUILD_MEMORY])
            loads: tuple[tuple[Side, Iterable[Item]], ...] = (
                ("pub", publications),
                ("sub", subscriptions),
            )
            for side, items in loads:
                cur.execute(f"SELECT NOT EXISTS (SELECT FROM {self.master(side)})")
                rebuild = [i for i in self._indexes() if i.side == side]
                if not cur.fetchone()[0]:  # type: ignore[index]  # NOT EXISTS returns one row
                    rebuild = []
                for index in rebuild:
                    cur.execute(f"DROP INDEX {self.q(index.name)}")
                self._write(cur, side, items)
                for index in rebuild:
                    cur.execute(self._index_sql(index))
            cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", [previous])
            if not self.conn.autocommit:
                self._analyze(cur)
        if self.conn.autocommit:
            self.analyze()
