"""Partitions and their leases (issue 35): which engine process advances which
subscriptions.

A subscription belongs to partition ``id % N`` (``SUBSCRIPTION_ENGINE_PARTITIONS``). Every
process beats in ``SubscriptionEngineProcess``; the live ones (beaten within a lease) share
the partitions: each aims at ``ceil(N / live)``, claims free or expired ones up to that
(``SKIP LOCKED``: two claimers never wait on each other) and gives back those over it, so
a second process gets about half. A lease lasts ``SUBSCRIPTION_ENGINE_LEASE_SECONDS``
unless renewed; a process that dies stops renewing and its partitions are claimed by the
others once expired. A batch's commit locks its lease rows and checks they are still its
own (``leases_commit``): a claim changes the owner under the same lock, so no commit of
the old owner lands after the new owner has read the partition. An expired lease nobody
has claimed yet is still the process's own: a batch longer than a lease (10,000
evaluators read after a takeover) renews it instead of losing everything it did.

A step can still last longer than a lease (a batch of 2,000 events against 50,000
subscriptions on a loaded machine), and then another process would claim the partitions
it is working on and the step's work would be lost. So while a step runs, a thread of the
process's own (``LeaseKeeper``, started by the runner) renews its leases and its heartbeat
every third of a lease on a connection of its own (``leases_renew``); it skips the lease
rows a transaction holds (the batch's commit, which renews them itself), so it never waits
on the commit nor deadlocks with it.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, connections, transaction

from exchange.models import SubscriptionEngineProcess, SubscriptionPartition

log = logging.getLogger(__name__)

# The partitions' rows that do not exist yet. Only those: an INSERT that meets an existing
# row in the unique index waits for any transaction updating that row, and every batch of
# every process updates its partitions' rows (``COMMIT``), so inserting all of them each
# upkeep made each process wait, every third of a lease, for the other's batch under way
# (one upkeep waited 619 ms behind a checkpoint's batch).
ENSURE_PARTITIONS = (
    "INSERT INTO exchange_subscriptionpartition "
    "(partition, owner, cursor, checkpoint_cursor) "
    "SELECT p, '', %s, %s FROM generate_series(0, %s - 1) AS p "
    "WHERE NOT EXISTS (SELECT FROM exchange_subscriptionpartition WHERE partition = p) "
    "ON CONFLICT DO NOTHING"
)
BEAT = (
    "INSERT INTO exchange_subscriptionengineprocess "
    "(name, heartbeat_at, started_at, partitions, cursor, lag, subscriptions) "
    "VALUES (%s, clock_timestamp(), clock_timestamp(), %s, %s, %s, %s) "
    "ON CONFLICT (name) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, "
    "partitions = excluded.partitions, cursor = excluded.cursor, lag = excluded.lag, "
    "subscriptions = excluded.subscriptions"
)
LIVE_PROCESSES = (
    "SELECT count(*) FROM exchange_subscriptionengineprocess "
    "WHERE heartbeat_at > clock_timestamp() - make_interval(secs => %s)"
)
# A killed process never deletes its own row (``leases_release`` is a clean stop's): the
# live ones delete those that stopped beating over the retention ago (never within a lease).
FORGET_DEAD = (
    "DELETE FROM exchange_subscriptionengineprocess "
    "WHERE heartbeat_at < clock_timestamp() - make_interval(secs => greatest(%s, %s))"
)
RENEW = (
    "UPDATE exchange_subscriptionpartition "
    "SET expires_at = clock_timestamp() + make_interval(secs => %s) "
    "WHERE partition = ANY(%s) AND partition < %s AND owner = %s RETURNING partition"
)
CLAIM = (
    "UPDATE exchange_subscriptionpartition "
    "SET owner = %s, expires_at = clock_timestamp() + make_interval(secs => %s) "
    "WHERE partition IN (SELECT partition FROM exchange_subscriptionpartition "
    "  WHERE partition < %s AND (owner = '' OR expires_at IS NULL "
    "  OR expires_at <= clock_timestamp()) "
    "  ORDER BY partition LIMIT %s FOR UPDATE SKIP LOCKED) "
    "RETURNING partition"
)
RELEASE = (
    "UPDATE exchange_subscriptionpartition SET owner = '', expires_at = NULL "
    "WHERE partition = ANY(%s) AND owner = %s"
)
# The keeper's renewal: the rows no transaction holds (SKIP LOCKED: never a wait).
RENEW_UNLOCKED = (
    "UPDATE exchange_subscriptionpartition "
    "SET expires_at = clock_timestamp() + make_interval(secs => %s) "
    "WHERE partition IN (SELECT partition FROM exchange_subscriptionpartition "
    "  WHERE partition = ANY(%s) AND partition < %s AND owner = %s "
    "  ORDER BY partition FOR UPDATE SKIP LOCKED) "
    "RETURNING partition"
)
TOUCH = (
    "UPDATE exchange_subscriptionengineprocess SET heartbeat_at = clock_timestamp() WHERE name = %s"
)
# A batch's commit, first: lock the lease rows of the held partitions still the process's own
# (in partition order), move their cursor and renew them, in one statement; the batch writes
# only for the partitions it returns.
COMMIT = (
    "UPDATE exchange_subscriptionpartition AS p SET cursor = greatest(p.cursor, %s), "
    "expires_at = clock_timestamp() + make_interval(secs => %s) "
    "FROM (SELECT partition FROM exchange_subscriptionpartition "
    "  WHERE partition = ANY(%s) AND owner = %s ORDER BY partition FOR UPDATE) AS mine "
    "WHERE p.partition = mine.partition RETURNING p.partition"
)
CHECKPOINTED = (
    "UPDATE exchange_subscriptionpartition "
    "SET checkpoint_cursor = %s, checkpointed_at = now(), book = %b WHERE partition = ANY(%s)"
)


@dataclass(frozen=True)
class Beat:
    """What a process reports at its heartbeat (the staff dashboard and ``/healthz``)."""

    cursor: int
    lag: int
    subscriptions: int


def leases_upkeep(
    *, name: str, held: set[int], count: int, lease_seconds: float, log_end: int, beat: Beat
) -> tuple[set[int], set[int]]:
    """One round of the process ``name``'s lease upkeep, in one transaction: its heartbeat,
    the rows of processes dead over ``SUBSCRIPTION_ENGINE_PROCESS_RETENTION_SECONDS``
    deleted, its held partitions renewed, free or expired ones claimed up to its share,
    and those over its share given back. Returns (held now, newly claimed); a partition missing from
    the first was lost (expired and taken) or given back."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(ENSURE_PARTITIONS, [log_end, log_end, count])
        cursor.execute(BEAT, [name, len(held), beat.cursor, beat.lag, beat.subscriptions])
        retention = settings.SUBSCRIPTION_ENGINE_PROCESS_RETENTION_SECONDS
        cursor.execute(FORGET_DEAD, [retention, lease_seconds])
        cursor.execute(LIVE_PROCESSES, [lease_seconds])
        (live,) = cursor.fetchone() or (1,)
        share = math.ceil(count / max(1, live))
        cursor.execute(RENEW, [lease_seconds, sorted(held), count, name])
        kept = {row[0] for row in cursor.fetchall()}
        claimed: set[int] = set()
        if len(kept) < share:
            cursor.execute(CLAIM, [name, lease_seconds, count, share - len(kept)])
            claimed = {row[0] for row in cursor.fetchall()}
        elif len(kept) > share:
            extra = sorted(kept)[share:]
            cursor.execute(RELEASE, [extra, name])
            kept -= set(extra)
    return kept | claimed, claimed


def leases_commit(db: Any, *, name: str, held: set[int], cursor: int, lease_seconds: float) -> None:
    """Inside a batch's transaction, first, on the psycopg cursor ``db`` (in a pipeline:
    the statement is sent with the batch's next, its rows read when needed): lock the lease
    rows of ``held`` that ``name`` still holds (no other process claimed them), in
    partition order, move their cursor to ``cursor`` and renew them. ``db.fetchall()`` then
    gives those partitions: the batch writes only for them."""
    db.execute(COMMIT, [cursor, lease_seconds, sorted(held), name])


def leases_release(*, name: str, held: set[int]) -> None:
    """A process stopping: give back its partitions at once (the others need not wait for
    the leases to expire) and drop its heartbeat."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(RELEASE, [sorted(held), name])
        SubscriptionEngineProcess.objects.filter(name=name).delete()


def partitions_checkpointed(
    db: Any, *, partitions: set[int], cursor: int, book: bytes | None = None
) -> None:
    """Inside a batch's transaction, on the psycopg cursor ``db``: the partitions'
    evaluators were stored at ``cursor``, the watches' shared open offers in ``book`` (None:
    no watch left them out)."""
    db.execute(CHECKPOINTED, [cursor, book, sorted(partitions)])


def partitions_books(*, partitions: set[int]) -> dict[int, tuple[int, bytes | None]]:
    """Each partition's checkpoint cursor and the book of open offers stored with it."""
    rows = SubscriptionPartition.objects.filter(partition__in=partitions).values_list(
        "partition", "checkpoint_cursor", "book"
    )
    return {p: (cursor, None if book is None else bytes(book)) for p, cursor, book in rows}


def leases_renew(*, name: str, held: set[int], count: int, lease_seconds: float) -> set[int]:
    """Renew ``name``'s leases among ``held`` that no transaction holds, and its heartbeat
    (autocommit, one statement each: from the ``LeaseKeeper``'s thread). Returns the
    partitions renewed."""
    with connection.cursor() as cursor:
        cursor.execute(RENEW_UNLOCKED, [lease_seconds, sorted(held), count, name])
        renewed = {row[0] for row in cursor.fetchall()}
        cursor.execute(TOUCH, [name])
    return renewed


class LeaseKeeper:
    """A thread that calls ``renew`` every ``interval`` seconds while a step runs
    (``with keeper.busy(): engine.step()``), so that a step longer than a lease keeps its
    partitions. Each renewal runs on a database connection of the thread's own, closed
    after it (nothing is held between steps). A failed renewal is logged: the step's
    commit finds out whether the leases held (``leases_commit``)."""

    def __init__(self, renew: Callable[[], object], interval: float) -> None:
        self.renew = renew
        self.interval = interval
        self.renewals = 0  # done so far (read by tests and logs)
        self._busy = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._busy.set()  # (wakes it if it waits for a step)
        self._thread.join()

    @contextmanager
    def busy(self) -> Iterator[None]:
        """The renewals' span: a step."""
        self._busy.set()
        try:
            yield
        finally:
            self._busy.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._busy.wait()
            if self._stop.wait(self.interval):
                return
            if not self._busy.is_set():
                continue  # the step ended meanwhile: the loop renews at its upkeep
            try:
                self.renew()
                self.renewals += 1
            except Exception:  # the commit checks the leases; this only helps them hold
                log.warning("lease renewal failed", exc_info=True)
            finally:
                connections.close_all()  # this thread's own connections only
