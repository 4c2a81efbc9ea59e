"""One engine process's memory and its batches (issue 35; the package docstring says where
it sits).

The process holds every active subscription of its partitions as a ``Followed``: its
evaluator, where it stands, and how many of its next outputs are in its outbox already.
The live ones (history done, standing where the engine stands) sit in ONE
``SubscriptionSet``, which each event walks once (its patterns over public event types
share automata and threshold or bound groups, whoever owns them: ``multi.public_only``); the others (new ones replaying their
history, resumed ones, and every one right after the process claimed its partition) are
*joiners*, each at its own cursor, fed by ``multi.advance_members`` and moved into the set
once they stand where the engine does and are live.

A batch (``Engine.step``): the log's end and at most ``batch`` events after the engine's
cursor are read once, in one statement (with their owners, for visibility), joiners behind
the cursor are fed one slice of at most ``chunk`` events of their past (so a long history
delays the live notifications of the others by one slice a batch), then the joiners at the
cursor and the live set the batch's events. One transaction then locks the process's lease
rows, renews them and moves their cursors (one statement: only partitions still its own
are written), locks the rows of the subscriptions with something to write, writes their
notifications (one INSERT from arrays) numbered on from each row's ``last_n``, their
``last_n`` and any end (``completed``, ``state_limit``, ``runtime_error``); the
``sub:<id>`` messages go after the commit. The rows with new notifications are locked by
the UPDATE that lengthens their outboxes (``NOTIFIED_ROWS``: it returns each written row's
state and ``last_n`` before it, from which the notifications are numbered), the others (an
end, a pause, a checkpoint) by ``LOCK_ROWS``. (A lock and then a write of each notified row,
as two statements, were the largest part of a batch's cost in PostgreSQL per notification:
``ops/benchmarks/engine_batch.py --fanout``.) Nothing per subscription is read or written for
the others: their state stays in memory. At 50 events a second each event is a batch of
its own, so these statements are the engine's cost (py-spy: more than the evaluation): the
transaction goes on a psycopg pipeline with its ``BEGIN`` and ``COMMIT`` (``_pipelined``),
in two round trips (the leases with the rows' locks, then the writes with the commit; one
when nothing but the cursors is written), and the statements bind their values on the
server, so psycopg prepares them.

Exactly once. A subscription's outputs are a function of the log (the evaluator is
deterministic, and ``advance_members``/``SubscriptionSet`` give what feeding it alone
gives). Its row's ``cursor``, ``evaluator`` and ``checkpoint_n`` are a checkpoint: the
evaluator after the events up to ``cursor``, having given ``checkpoint_n`` notifications.
The engine starts a round of checkpoints every ``SUBSCRIPTION_ENGINE_CHECKPOINT_EVENTS`` events
or ``..._SECONDS`` seconds, and stores one on a pause, in a batch's transaction. A round goes
over the process's subscriptions a slice a batch (``Round``): writing all of them in one
batch held the events behind it for seconds (30,000 subscriptions on two processes: p99
2.9 s against 315 ms in a run with no checkpoint, ``ops/benchmarks/alerts.py``); a clean
stop stores all of them at once. A process that takes a
subscription (a claim, a restart after ``kill -9``, a resume) restores the checkpoint,
replays the log from its cursor and drops its first ``last_n - checkpoint_n`` outputs,
which are in the outbox; the rest are new. A batch rolled back (a crash, a lost lease)
leaves the rows as they were, and its memory is rebuilt from them.

The checkpoint's evaluator is an explicit, versioned snapshot of plain data
(``matching/subscriptions/run/snapshot.py``). One this code cannot read as it stands (another
version without an upgrade, or a pickle of the releases before snapshots) is rebuilt by
replay: a fresh evaluator at the cursor its registration started at, with none of its
outputs counted as checkpointed (``_restored``), so the replay drops the first ``last_n``
and writes the rest.

Fairness: the shared set tells the engine each member's work (``SubscriptionSet.charge``),
added up per owner for the batch. An owner past ``OWNER_BUDGET`` has its live forms 2 and 3
moved at that event into a ``Lane``, a set of their own at their own cursor, fed after the
shared set at most the budget a batch and merged back once it stands where the set does:
the others' notifications commit in the batch that reads their events, after at most the
budget plus one event's work of each costly owner (docs/subscriptions.md, *Fairness*).

Form 4 watches are not in the set: the live ones are delivered by dissemination in the
process's ``WatchHub`` (``matching/dissemination/hosted.py``), over the open offers held
once for all of them; the joiners of a slice follow one book between them
(``hosted.advance_watches``, not ``advance_members``), and a joiner's row keeps its
checkpoint rather than a copy of that book (``_lent``). The live ones' checkpoints leave
the offers out and the hub's book is stored once with the partitions' checkpoint
(``watches.py``). The hub is not charged to owners' budgets (its watches go in no lane).

Pause, resume, delete: the services publish a change (``subscriptions_changed_request``);
the engine then reads its partitions' active and paused rows (``_rescan``): a paused one
is checkpointed where it stands and dropped at the next commit, a deleted one dropped (its
outputs not yet committed are not written: the commit finds its row ``done``), a resumed
or new one joins from its row. The services change a row under its lock (``FOR UPDATE``),
which conflicts with the lock a commit's UPDATE or ``LOCK_ROWS`` takes, so a change and a
commit touching one row are one after the other. A commit first: the change finds its
notifications written (a pause keeps them: the commit checkpointed the row after them). A
change first: the commit's statement waits for it, then reads the row as it left it
(PostgreSQL re-reads a row changed while an UPDATE waited and applies its WHERE again), so
a row deleted meanwhile is neither written nor given notifications, and one paused
meanwhile is given the batch's (their events came before the pause) and checkpointed after
them (``tests/subscriptions/test_batch_statements.py``, on two sessions).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import psycopg
from django.conf import settings
from django.db import connection, transaction

from exchange.models import Subscription
from exchange.realtime.streams import group_for, group_send_made
from exchange.redis_clients import redis_client
from exchange.selectors.events import events_log_end
from exchange.selectors.subscription_log import subscriptions_log_read, subscriptions_log_tail
from exchange.selectors.subscriptions import notification_json
from exchange.services.subscriptions import (
    CHUNK,
    _failure_text,
    _messages,
    _outputs,
    _state_load,
    evaluator_dump,
    stream_name,
    subscription_rebuilt,
)
from exchange.subscription_engine.leases import (
    Beat,
    leases_commit,
    leases_release,
    leases_renew,
    leases_upkeep,
    partitions_checkpointed,
)
from exchange.subscription_engine.watches import Books, choices_flush, hub_book
from matching.dissemination.hosted import WatchHub, advance_watches, hosted
from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions.events import Event, event_from_dict
from matching.subscriptions.language.forms import Kind
from matching.subscriptions.language.schema import PUBLIC_TYPES
from matching.subscriptions.run.multi import Failed, Member, SubscriptionSet, advance_members
from matching.subscriptions.run.snapshot import SnapshotStale
from matching.subscriptions.watches.offers import OpenOffers
from matching.subscriptions.watches.watch import WatchEngine

log = logging.getLogger(__name__)

# Events one batch reads after the engine's cursor.
BATCH = 2000
# Work one owner's subscriptions may do in one batch, in units (``SubscriptionSet.charge``):
# one a push of a member evaluated alone (forms 2 and 3), one a pattern instance offered the
# event, and ``limits.CHECK_EVERY`` each time a member's meter asks its interrupt (join
# candidates). Past it, the owner's forms 2 and 3 go on in a lane of their own (``Lane``).
OWNER_BUDGET = 10_000
# The forms that move into their owner's lane (form 1 costs the matching index's walk, form
# 4 is delivered by the process's WatchHub).
LANE_KINDS = frozenset({Kind.COMPOSITE, Kind.PATTERN})
# Seconds between reads of each partition's rows when nothing said they changed: one
# partition a step, in turn (``Engine._rescan``). All of them at once, 15,000 rows, took
# 140-200 ms every 5 s for one process holding 30,000 subscriptions (its steps timed over
# ``ops/benchmarks/alerts.py``'s database), a stall of every event behind it.
RESCAN_SECONDS = 5.0
# Snapshots one batch of a checkpoint round writes at most (``Round``; ``ROUND_SPREAD``
# paces it below that): at about 0.2 ms each (15,000 in 2.8 s), some 20 ms a batch. (500 a
# batch is about 100 ms: at 30,000 subscriptions, on a loaded machine, the lag stayed at
# 20 to 100 events while a round ran.)
CHECKPOINT_SLICE = 100
# The part of ``SUBSCRIPTION_ENGINE_CHECKPOINT_SECONDS`` a round spreads over (``Engine.
# _round_pace``): half, so that a round is over well before the next is due. A slice of 100
# in every batch until the round was done held each of those batches 20 to 50 ms (py-spy
# and per-step timers over ``ops/benchmarks/alerts.py``'s 30,000 subscriptions), the
# alerts' p99 then 622 to 1,243 ms against 228 ms in a run with no checkpoint.
ROUND_SPREAD = 0.5
# Rows one step reads into joiners (restoring each checkpoint): the rest join at the next
# steps, so that a step stays well within a lease. Two processes taking 50,000 each at once
# spent minutes in one step, past their 5 s leases, and took each other's partitions in
# turn (``ops/bench alerts`` at 100,000 subscriptions).
JOIN_SLICE = 2000

ACTIVE = Subscription.State.ACTIVE
PAUSED = Subscription.State.PAUSED


def rescan_sql(count: int) -> str:
    """The statement that reads the active and paused rows of some of ``count`` partitions
    (their numbers its one parameter), by the index ``subscription_partition`` (migration
    0024) when ``count`` is the setting's ``N`` the index holds ``id % N`` for. ``count`` is
    written into the statement, not bound: a plan made for a bound divisor (a prepared
    statement's generic plan) cannot use an index on an expression with a number in it."""
    return (
        "SELECT id, state FROM exchange_subscription "
        f"WHERE state IN ('active', 'paused') AND id %% {int(count)} = ANY(%s::bigint[])"
    )


# The rows a commit writes without new notifications (ended, paused, checkpointed), of the
# partitions still the process's own (their lease rows locked by ``leases_commit`` just
# before, in the same transaction).
LOCK_ROWS = (
    "SELECT id, state, last_n FROM exchange_subscription WHERE id = ANY(%s::bigint[]) "
    "AND id %% %s::int IN (SELECT partition FROM exchange_subscriptionpartition "
    "WHERE owner = %s) ORDER BY id FOR UPDATE OF exchange_subscription"
)
# A commit's notifications, ``created_at`` the transaction's time (as ``now()`` in any
# INSERT of the services); their data as one JSON array, zipped with the other columns
# (``ROWS FROM``): one ``json.dumps`` of a list costs about 40% of one a notification. The
# integer columns go as array literals in text (``int_array``): psycopg dumps a list in
# binary element by element in Python, 0.2 us an element, a fifth of the engine's CPU
# per notification for the five arrays of a commit (``ops/benchmarks/engine_batch.py
# --fanout``); a literal is 0.09.
INSERT_NOTES = (
    "INSERT INTO exchange_subscriptionnotification (subscription_id, n, seq, data, created_at) "
    "SELECT v.id, v.n, v.seq, v.data, now() "
    "FROM ROWS FROM (unnest(%s::bigint[]), unnest(%s::int[]), unnest(%s::bigint[]), "
    "jsonb_array_elements(%b::jsonb)) AS v(id, n, seq, data)"
)
# The rows with new notifications, locked by the UPDATE that lengthens their outbox (the
# lock ``LOCK_ROWS`` took, then the write after it, in one statement: issue 35 item 7):
# only an active or paused row of a partition still the process's own is written, and
# each written row's state and outbox length before it come back.
NOTIFIED_ROWS = (
    "UPDATE exchange_subscription AS s SET last_n = s.last_n + v.found "
    "FROM unnest(%s::bigint[], %s::int[]) AS v(id, found) WHERE s.id = v.id "
    "AND s.state IN ('active', 'paused') AND s.id %% %b::int IN (SELECT partition "
    "FROM exchange_subscriptionpartition WHERE owner = %b) "
    "RETURNING s.id, s.state, s.last_n - v.found"
)
# Rows ended (evaluator NULL) or checkpointed (cursor, evaluator, checkpoint_n).
UPDATE_ROWS = (
    "UPDATE exchange_subscription AS s SET last_n = v.last_n, state = v.state, "
    'reason = v.reason, "cursor" = coalesce(v.cursor, s.cursor), evaluator = v.evaluator, '
    "checkpoint_n = coalesce(v.checkpoint_n, s.checkpoint_n) "
    "FROM unnest(%b::bigint[], %b::int[], %b::text[], %b::text[], %b::bigint[], %b::bytea[], "
    "%b::int[]) AS v(id, last_n, state, reason, cursor, evaluator, checkpoint_n) "
    "WHERE s.id = v.id"
)

LogEvent = tuple[int | None, Event]
T = TypeVar("T")
# (the state and ``last_n`` of a row the commit's statements did not lock)
_UNLOCKED = ("", 0)


@dataclass(eq=False)
class Followed:
    """An active subscription this process follows. ``member`` holds its evaluator and,
    while it is a joiner, where it stands (``member.cursor``); once ``live`` it is in the
    set and stands where the engine does. ``skip``: its next outputs already in the
    outbox; ``last_n``: its outbox's length; ``leaving``: paused, to be checkpointed."""

    sub_id: int
    partition: int
    member: Member
    last_n: int
    skip: int
    live: bool = False
    leaving: bool = False
    found: list[tuple[int | None, Any]] = field(default_factory=list)
    # While live: its owner's lane (``Lane``), or None in the shared set.
    lane: Lane | None = None

    @property
    def owner(self) -> int:
        return cast(int, self.member.viewer)  # the row's owner_id

    @property
    def laned(self) -> bool:
        """Whether it goes in its owner's lane (``LANE_KINDS``)."""
        return self.member.sub.query.kind in LANE_KINDS

    @property
    def ended(self) -> bool:
        sub = self.member.sub
        return self.member.failed is not None or sub.finished or sub.suspended


@dataclass(eq=False)
class Lane:
    """An owner whose subscriptions did more than ``OWNER_BUDGET`` work in a batch: its
    live subscriptions of forms 2 and 3, taken out of the shared set at the event where that
    happened, in a set of their own that stands at ``cursor`` and is fed the log after
    the shared set, at most ``OWNER_BUDGET`` work a batch. Once it stands where the shared
    set does, its subscriptions go back into it (docs/subscriptions.md, *Fairness*)."""

    subs: SubscriptionSet
    cursor: int
    sees: Callable[[int | None], bool]  # the owner's visibility (``Member.sees``)
    # Made in this batch, at the event where its owner passed the budget: not fed in it.
    fresh: bool = True


@dataclass
class Round:
    """A checkpoint round under way: what the next batches store, in order, at most
    ``CHECKPOINT_SLICE`` snapshots a batch and, paced, about as many as keep the round to
    its spread (``Engine._checkpoints``). Each held partition comes as a piece of its live
    watches and the book of open offers they share (stored once on the partition's row, at
    the cursor of the batch that stores them: so a partition's live watches are stored in
    one batch, with its book, a piece never cut), after a piece of its other subscriptions,
    which a batch takes as much of as it has room for. A subscription that joins during the
    round waits for the next; one gone meanwhile is passed over."""

    pieces: deque[tuple[int, list[int], bool]]  # (partition, subscriptions, book)
    size: int  # the subscriptions of all its pieces when it started
    at: float  # when it started or last gave a slice (the engine's clock)

    def take(self, most: int) -> tuple[set[int], set[int]]:
        """The next subscriptions, at least one piece or part of one, up to ``most``
        unless a book's piece alone is more: their ids and the partitions whose book they
        store."""
        ids: set[int] = set()
        books: set[int] = set()
        while self.pieces:
            partition, some, book = self.pieces[0]
            room = most - len(ids)
            if not book and len(some) > room > 0:
                ids.update(some[:room])  # the rest of the piece in the next batches
                self.pieces[0] = (partition, some[room:], book)
                break
            if ids and len(some) > room:
                break
            self.pieces.popleft()
            ids.update(some)
            if book:
                books.add(partition)
        return ids, books


@dataclass
class Row:
    """One row's write at a commit."""

    sub_id: int
    last_n: int
    state: str = ACTIVE
    reason: str = ""
    cursor: int | None = None
    evaluator: bytes | None = None
    checkpoint_n: int | None = None


class Engine:
    """One process's share of the live subscriptions (see the module docstring)."""

    def __init__(
        self,
        name: str,
        *,
        partitions: int | None = None,
        lease_seconds: float | None = None,
        batch: int = BATCH,
        chunk: int = CHUNK,
        owner_budget: int = OWNER_BUDGET,
        checkpoint_events: int | None = None,
        checkpoint_seconds: float | None = None,
        checkpoint_slice: int = CHECKPOINT_SLICE,
        checkpoint_spread: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.count = partitions or settings.SUBSCRIPTION_ENGINE_PARTITIONS
        self.lease_seconds = lease_seconds or settings.SUBSCRIPTION_ENGINE_LEASE_SECONDS
        self.batch = batch
        self.chunk = chunk
        self.owner_budget = owner_budget
        self.checkpoint_events = checkpoint_events or settings.SUBSCRIPTION_ENGINE_CHECKPOINT_EVENTS
        self.checkpoint_seconds = (
            checkpoint_seconds or settings.SUBSCRIPTION_ENGINE_CHECKPOINT_SECONDS
        )
        self.checkpoint_slice = checkpoint_slice
        # Seconds a round spreads over (0: a slice every batch, as fast as it may go).
        self.checkpoint_spread = (
            self.checkpoint_seconds * ROUND_SPREAD
            if checkpoint_spread is None
            else checkpoint_spread
        )
        self.clock = clock
        self.held: set[int] = set()
        self.cursor: int | None = None
        self.log_end = 0
        # Visibility differs between members (SPEC 5.6), so the set shares automata and
        # groups only among the patterns over public event types (``multi.public_only``).
        self.subs = SubscriptionSet(share=False, public=PUBLIC_TYPES)
        self.watches = WatchHub()  # the live form 4 watches, by dissemination
        self.followed: dict[int, Followed] = {}
        # The same by partition: a step reads one partition's rows (``_rescan``), and a walk
        # of every followed one to find them was half of that read at 30,000 (py-spy).
        self._partitions: dict[int, dict[int, Followed]] = {}
        self.lanes: dict[int, Lane] = {}  # by owner
        self.subs.charge = self._charge
        self._work: dict[int, int] = {}  # by owner, this batch
        self._over: list[int] = []  # owners past the budget at this event
        # The followed not in the set, and those with something for the next commit: a
        # batch looks at these, not at every subscription.
        self._joiners: dict[int, Followed] = {}
        self._dirty: set[int] = set()
        self.changed = True
        self._rescanned = self._upkept = float("-inf")
        self._rescan_turn = 0  # the next partition read in turn (``_rescan``)
        self._checkpointed = clock()
        self._since_checkpoint = 0
        self._round: Round | None = None  # a checkpoint round under way
        self._cursor_due = False  # a claimed partition's cursor to write (``upkeep``)
        self.dropped = 0  # subscriptions dropped since the start (``collector.EngineHeap``)

    # -- leases ------------------------------------------------------------------------

    def upkeep(self) -> None:
        """Beat, renew, claim and give back partitions (``leases.leases_upkeep``); the
        subscriptions of a partition no longer held are forgotten, those of a new one are
        read at the next step."""
        self.log_end = events_log_end()
        held, claimed = leases_upkeep(
            name=self.name,
            held=self.held,
            count=self.count,
            lease_seconds=self.lease_seconds,
            log_end=self.log_end,
            beat=Beat(
                cursor=self.cursor or 0,
                lag=self.log_end - (self.cursor or self.log_end),
                subscriptions=len(self.subs)
                + len(self.watches)
                + sum(len(lane.subs) for lane in self.lanes.values()),
            ),
        )
        # A partition claimed again (its lease was taken by another process, or its row
        # vanished with an emptied database) is a new claim: what this process remembers
        # of it is stale, since another may have written its outboxes meanwhile.
        regained = claimed & self.held
        self._forget((self.held - held) | regained)
        if regained and regained == self.held:
            self.reset()  # nothing it remembers holds: start again from the rows
        self.held = held
        try:  # /healthz reads the beats from Redis, as the workers' (``selectors.status``)
            redis_client().zadd(
                settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY, {self.name: time.time()}
            )
        except Exception:  # the leases are in PostgreSQL: this is a report
            log.warning("subscription engine %s: no heartbeat in Redis", self.name, exc_info=True)
        if claimed:
            self.changed = True
            # its cursor is written at the next step even with nothing else to write, so
            # that a claimed partition does not read as behind while the log is quiet
            self._cursor_due = True
        self._upkept = self.clock()

    def renew(self) -> set[int]:
        """Renew the leases held (and the heartbeat) without waiting on a commit: what the
        ``LeaseKeeper``'s thread calls while a step runs (``leases.leases_renew``)."""
        return leases_renew(
            name=self.name, held=set(self.held), count=self.count, lease_seconds=self.lease_seconds
        )

    def stop(self) -> None:
        """A clean stop: the evaluators checkpointed where they stand (the next owner
        replays nothing of the live ones; a watch still in its history keeps the checkpoint
        it had, ``_lent``), and the partitions given back at once."""
        if self.cursor is not None and self.held:
            self._commit(self.cursor, whole=True)
        leases_release(name=self.name, held=self.held)
        self._forget(set(self.held))
        self.held = set()

    def _forget(self, partitions: set[int]) -> None:
        if not partitions:
            return
        for followed in self._in(partitions):
            self._drop(followed)

    def _drop(self, followed: Followed) -> None:
        if self.followed.pop(followed.sub_id, None) is not None:
            self.dropped += 1
            self._partitions[followed.partition].pop(followed.sub_id, None)
        self._joiners.pop(followed.sub_id, None)
        self._dirty.discard(followed.sub_id)
        if followed.sub_id in self.watches:
            self.watches.discard(followed.sub_id)
        elif followed.sub_id in self._set_of(followed):
            self._set_of(followed).remove(followed.sub_id)
        followed.lane = None

    def _in(self, partitions: set[int]) -> list[Followed]:
        """The followed subscriptions of ``partitions``."""
        return [f for p in partitions for f in self._partitions.get(p, {}).values()]

    def _set_of(self, followed: Followed) -> SubscriptionSet | WatchHub:
        """The set ``followed`` is in while live: the hub for a watch, else its lane's or
        the shared one."""
        sub = followed.member.sub
        if sub is not None and hosted(sub):
            return self.watches
        return followed.lane.subs if followed.lane is not None else self.subs

    def reset(self) -> None:
        """Forget every evaluator (after a batch that did not commit): they are read again
        from their rows."""
        for followed in list(self.followed.values()):
            self._drop(followed)
        self.lanes.clear()
        self._round = None
        self.watches = WatchHub(optimizer=self.watches.optimizer)  # its costs as learnt
        self.cursor = None
        self.changed = True

    # -- the rows ----------------------------------------------------------------------

    def _rescan(self, partitions: set[int] | None = None) -> None:
        """Read the active and paused rows of ``partitions`` (by default every one held):
        join the new and resumed ones, mark the paused ones leaving, forget the ended ones."""
        partitions = set(self.held) if partitions is None else partitions & self.held
        with connection.cursor() as cursor:
            cursor.execute(rescan_sql(self.count), [sorted(partitions)])
            states = dict(cursor.fetchall())
        for followed in self._in(partitions):
            state = states.get(followed.sub_id)
            if state is None:
                self._drop(followed)
            else:
                followed.leaving = state == PAUSED
            if followed.leaving and followed.live:
                # Out of the set where the set stands; fed nothing more (checkpointed at
                # the commit).
                lane = followed.lane
                followed.member.sub = self._set_of(followed).remove(followed.sub_id)
                followed.member.cursor = lane.cursor if lane else self.cursor or 0
                followed.live, followed.lane = False, None
                self._joiners[followed.sub_id] = followed
            if followed.leaving:
                self._dirty.add(followed.sub_id)
        new = [s for s, state in states.items() if state == ACTIVE and s not in self.followed]
        self._join(sorted(new)[:JOIN_SLICE])
        self.changed = len(new) > JOIN_SLICE  # the next step reads the next slice
        self._rescanned = self.clock()

    def _join(self, ids: list[int]) -> None:
        rows = (
            Subscription.objects.filter(id__in=ids, state=ACTIVE)
            .select_related("owner")
            .only(
                "id",
                "cursor",
                "seam",
                "last_n",
                "checkpoint_n",
                "evaluator",
                "query",
                "now",
                "owner__id",
                "owner__is_staff",
            )
        )
        books = Books(self.held, self.count)
        # The open offers of the watches restored in their history with offers of their
        # own (checkpoints of before ``hosted.advance_watches``), one per cursor: they are
        # the log's at that cursor, so those at one cursor hold one between them.
        own: dict[int, OpenOffers] = {}
        for row in rows:
            member: Member
            checkpoint_n = row.checkpoint_n
            try:
                evaluator, cursor, checkpoint_n = _restored(row, books)
            except Exception as exc:  # it is suspended alone
                # no evaluator: the member only carries its failure to the commit
                member = Member(row.pk, None, row.cursor, row.seam, row.owner_id)  # type: ignore[arg-type]
                member.failed = Failed(row.cursor, exc)
            else:
                member = Member(
                    row.pk, evaluator, cursor, row.seam, row.owner_id, row.owner.is_staff
                )
                engine = evaluator.engine
                if isinstance(engine, WatchEngine) and not (engine.registered or engine.borrowed):
                    engine.follow(own.setdefault(cursor, engine.offers))
            followed = Followed(
                row.pk, row.pk % self.count, member, row.last_n, row.last_n - checkpoint_n
            )
            self.followed[row.pk] = self._joiners[row.pk] = followed
            self._partitions.setdefault(followed.partition, {})[row.pk] = followed
            if member.failed is not None:
                self._dirty.add(row.pk)

    # -- a batch -----------------------------------------------------------------------

    def step(self) -> bool:
        """One batch; True if the log or a joiner's past holds more for it right away."""
        if self.clock() - self._upkept >= self.lease_seconds / 3:
            self.upkeep()
        if not self.held:
            return False
        if self.changed:
            self._rescan()  # something changed somewhere: every partition
        elif self.clock() - self._rescanned >= RESCAN_SECONDS / len(self.held):
            turn = sorted(self.held)
            self._rescan({turn[self._rescan_turn % len(turn)]})
            self._rescan_turn += 1
        events: list[LogEvent] = []
        if self.cursor is not None:
            self.log_end, events = _tail(self.cursor, self.batch)
            if self.log_end < self.cursor:
                self.reset()  # the log was emptied (a test database flushed): start again
        if self.cursor is None:
            # From the lowest checkpoint: the joiners standing there that are live go
            # straight into the set, and the log after it is one stream for all of them.
            joiners = [f.member.cursor for f in self._joiners.values() if f.member.failed is None]
            self.cursor = min([events_log_end(), *joiners])
            self.log_end, events = _tail(self.cursor, self.batch)
        start = self.cursor
        upto = min(self.log_end, start + self.batch)
        self._work.clear()
        try:
            behind = self._catch_up(start)
            self._feed(events, start, upto)
            behind = self._lanes_feed(events, start, upto) or behind
            if upto > start or self._pending():
                self._commit(upto)
        except Exception:
            # The evaluators took some of the batch and the cursor did not move: fed again,
            # they would notify twice. They are forgotten and read again from their rows.
            self.reset()
            raise
        choices_flush(self.watches)
        self.cursor = upto
        return behind or upto < self.log_end or self.changed  # (more rows to join)

    def _pending(self) -> bool:
        """Whether a commit has something to write though the cursor did not move (a
        joiner's outputs, an end, a pause, a checkpoint due): an idle process writes
        nothing."""
        return (
            self._round_due(timed=False)
            or self._round is not None
            or bool(self._dirty)
            or self._cursor_due
        )

    def _round_due(self, *, timed: bool) -> bool:
        """Whether a checkpoint round is due: ``checkpoint_events`` events since the last,
        or with ``timed`` also ``checkpoint_seconds`` (at a commit made anyway: an idle
        process does not commit for the time alone)."""
        return self._since_checkpoint >= self.checkpoint_events or (
            timed and self.clock() - self._checkpointed >= self.checkpoint_seconds
        )

    def _catch_up(self, start: int) -> bool:
        """Feed the joiners behind the engine's cursor one slice of their past; True if
        some are still behind."""
        behind = [
            f
            for f in self._joiners.values()
            if not f.leaving and f.member.cursor < start and f.member.failed is None
        ]
        if not behind:
            return False
        low = min(f.member.cursor for f in behind)
        high = min(start, low + self.chunk)
        group = [f for f in behind if f.member.cursor < high]
        _advance([f.member for f in group], _read(low, high), upto=high)
        for f in group:
            f.member.cursor = high
            self._dirty.add(f.sub_id)
        return any(f.member.cursor < start for f in behind)

    def _feed(self, events: list[LogEvent], start: int, upto: int) -> None:
        """The batch's events to the joiners that stand at the cursor (or between it and
        ``upto``) and to the live set; then the joiners now live join the set."""
        self._promote(start)
        joining = [
            f
            for f in self._joiners.values()
            if not f.leaving and start <= f.member.cursor < upto and not f.ended
        ]
        if joining:
            _advance([f.member for f in joining], events, upto=upto)
            for f in joining:
                f.member.cursor = upto
                self._dirty.add(f.sub_id)
        followed = self.followed
        for owner, event in events:

            def visible(sub_id: Any, owner: int | None = owner) -> bool:
                return followed[sub_id].member.sees(owner)

            # an event of no owner is everyone's: no member need be asked
            self._outputs(self.subs.push(event, visible if owner is not None else None))
            if owner is None:  # offer and best_offer events are public (SPEC 5.6)
                self._outputs(self.watches.push(event))
            while self._over:
                self._defer(self._over.pop(), event.seq)
        self._since_checkpoint += len(events)

    def _charge(self, sub_id: Any, units: int) -> None:
        """A member's work (``SubscriptionSet.charge``), to its owner's account."""
        owner = cast(int, self.followed[sub_id].member.viewer)  # ``owner``, inlined
        work = self._work.get(owner, 0)
        self._work[owner] = work + units
        if work < self.owner_budget <= work + units and owner not in self.lanes:
            self._over.append(owner)

    def _defer(self, owner: int, at: int) -> None:
        """``owner`` passed its budget at ``at``: its live forms 2 and 3 leave the shared set
        there for a lane of their own."""
        members = [
            f
            for f in self.followed.values()
            if f.live and f.lane is None and f.owner == owner and f.laned
        ]
        if not members:
            return
        lane = Lane(SubscriptionSet(share=False, public=PUBLIC_TYPES), at, members[0].member.sees)
        lane.subs.charge = self._charge
        self.lanes[owner] = lane
        for f in members:
            if f.sub_id in self.subs:  # not ended at this event
                lane.subs.add(f.sub_id, self.subs.remove(f.sub_id))
                f.lane = lane

    def _outputs(self, outputs: list[tuple[Any, Any]]) -> None:
        """A set's outputs for one event, to their members (the set's ids are ints)."""
        for sub_id, output in outputs:
            self._dirty.add(sub_id)
            member = self.followed[sub_id].member
            if isinstance(output, Failed):
                member.failed = output
            else:
                member.outputs.append(output)

    def _lanes_feed(self, events: list[LogEvent], start: int, upto: int) -> bool:
        """Each lane fed the log from its cursor towards ``upto`` while its owner's work
        this batch is within ``owner_budget`` (counted after each event, so past it by at
        most one event's work; one event at least, but none in the batch that made the
        lane, whose owner is past the budget already); a lane behind the batch reads at most
        ``chunk`` events of its past. A lane standing at ``upto`` goes back into the
        shared set. Then the joiners standing at ``upto`` go live. True if a lane is still
        behind."""
        behind = False
        for owner, lane in list(self.lanes.items()):
            if not len(lane.subs):  # its members ended or left: nothing to hold back
                del self.lanes[owner]
                continue
            if lane.cursor < upto:
                if lane.cursor >= start:
                    stretch, end = [(o, e) for o, e in events if e.seq > lane.cursor], upto
                else:
                    end = min(upto, lane.cursor + self.chunk)
                    stretch = _read(lane.cursor, end)
                for i, (event_owner, event) in enumerate(stretch):
                    if (i or lane.fresh) and self._work.get(owner, 0) >= self.owner_budget:
                        end = lane.cursor  # (one event a batch at least: it moves on)
                        break
                    if lane.sees(event_owner):
                        self._outputs(lane.subs.push(event))
                    lane.cursor = event.seq
                lane.cursor = end
                lane.fresh = False
            if lane.cursor < upto:
                behind = True
                continue
            del self.lanes[owner]  # caught up: back into the shared set, where it stands
            for f in self.followed.values():
                if f.lane is lane:
                    if f.sub_id in lane.subs:
                        self.subs.add(f.sub_id, lane.subs.remove(f.sub_id))
                    f.lane = None
        self._promote(upto)
        return behind

    def _promote(self, at: int) -> None:
        """The joiners that stand at ``at`` with their history done (and neither ended nor
        leaving) go into the set."""
        for f in list(self._joiners.values()):
            if (
                not f.leaving
                and f.member.cursor == at
                and at >= f.member.seam
                and not f.ended
                and f.member.sub.live
            ):
                lane = self.lanes.get(f.owner) if f.laned else None
                if lane is not None:
                    if lane.cursor != at:
                        continue  # its owner's lane is behind: a joiner meanwhile
                    f.lane = lane
                self._set_of(f).add(f.sub_id, f.member.sub)
                f.live = True
                del self._joiners[f.sub_id]

    def _commit(self, upto: int, whole: bool = False) -> None:
        """The batch's writes, in one transaction (the module docstring) of two round trips
        at most, on a psycopg pipeline: the leases (``leases_commit``: checked, renewed,
        their cursors moved) with the rows to write locked, then the notifications, the
        rows and the commit. A batch with nothing to write but its cursor is one trip.
        ``whole``: every subscription checkpointed (a clean stop), not a round's slice."""
        stored, books = self._checkpoints(whole)
        # each notified subscription's group, with what makes its messages (made only for
        # a group someone follows: ``group_send_made``)
        pushes: dict[str, Callable[[], list[dict]]] = {}
        gone: list[Followed] = []
        touched: dict[int, Followed] = {}
        candidates = (
            list(self.followed.values())
            if whole
            else [self.followed[i] for i in self._dirty | stored if i in self.followed]
        )
        for f in candidates:
            if f.partition not in self.held:
                continue
            # (a partition the commit finds lost is forgotten after it: what this takes
            # from its members is never written)
            found = _outputs(f.member.outputs)
            f.member.outputs.clear()
            if f.skip:
                dropped = min(f.skip, len(found))
                f.skip -= dropped
                found = found[dropped:]
            f.found = found
            if f.found or f.ended or f.leaving or f.sub_id in stored:
                touched[f.sub_id] = f
        with _pipelined() as db:
            leases = psycopg.Cursor(db)
            leases_commit(
                leases,
                name=self.name,
                held=self.held,
                cursor=upto,
                lease_seconds=self.lease_seconds,
            )
            if touched or books:
                # The rows with new notifications (and no failure, which ends the row: a
                # write of its own) are locked by lengthening their outboxes; the others
                # by a lock alone. A row deleted meanwhile is in neither answer: its
                # deletion committed before the statement took the lock (which waits for
                # it), and the UPDATE's WHERE reads the row as the deletion left it.
                notified = sorted(
                    sub_id for sub_id, f in touched.items() if f.found and f.member.failed is None
                )
                rest = sorted(set(touched) - set(notified))
                write, lock = psycopg.Cursor(db), psycopg.Cursor(db)
                if notified:
                    write.execute(
                        NOTIFIED_ROWS,
                        [
                            int_array(notified),
                            int_array([len(touched[i].found) for i in notified]),
                            self.count,
                            self.name,
                        ],
                    )
                if rest:
                    lock.execute(LOCK_ROWS, [rest, self.count, self.name])
                mine = {row[0] for row in leases.fetchall()}  # (all sent, one trip)
                locked = {s: (state, n) for s, state, n in write.fetchall()} if notified else {}
                if rest:
                    locked.update((s, (state, n)) for s, state, n in lock.fetchall())
                notes = Notes()
                rows: list[Row] = []
                for sub_id, f in touched.items():
                    if f.partition not in mine:
                        continue  # its partition was lost: forgotten below
                    state, last_n = locked.get(sub_id, _UNLOCKED)
                    if state not in (ACTIVE, PAUSED):
                        gone.append(f)  # deleted (or ended) meanwhile: nothing more is written
                        continue
                    first = last_n + 1
                    if state == ACTIVE and sub_id not in stored and not f.ended:
                        # Most rows: notifications and nothing else. ``_row`` would give a
                        # row of state ACTIVE and no checkpoint, so no write but its
                        # outbox's (``NOTIFIED_ROWS``), no end: what follows does it without
                        # a ``Row`` (a fifth of the commit's CPU per notification).
                        notes.add(sub_id, first, f.found)
                        if f.found:
                            pushes[group_for(stream_name(sub_id))] = functools.partial(
                                _pushed, sub_id, first, f.found, False
                            )
                        f.last_n = last_n + len(f.found)
                        continue
                    row = self._row(f, state, last_n, upto, f.sub_id in stored)
                    notes.add(sub_id, first, f.found)
                    ended = row.state == Subscription.State.DONE
                    if f.found or ended:
                        group = group_for(stream_name(sub_id))
                        pushes[group] = functools.partial(_pushed, sub_id, first, f.found, ended)
                    f.last_n = row.last_n
                    if row.state not in (ACTIVE, PAUSED) or row.cursor is not None:
                        rows.append(row)  # (its last_n again, if NOTIFIED_ROWS wrote it)
                    if row.state != ACTIVE:
                        gone.append(f)  # paused: checkpointed (below), joins again on resume
                _write(notes, rows)
                if books & mine:
                    # the book only if a live watch's snapshot here left it out: a round
                    # stores each partition's in a batch of its own
                    watched = any(sub_id in self.watches for sub_id in stored)
                    book = hub_book(self.watches, upto) if watched else None
                    partitions_checkpointed(leases, partitions=books & mine, cursor=upto, book=book)
        if not (touched or books):
            mine = {row[0] for row in leases.fetchall()}  # (read after the commit's trip)
        lost = self.held - mine
        self._dirty.clear()
        self._cursor_due = False
        for f in gone:
            self._drop(f)
        self._forget(lost)
        self.held = self.held - lost  # (a new set: the LeaseKeeper reads it)
        if pushes:
            try:
                group_send_made(pushes)
            except Exception:  # the outbox holds them; a follower catches up
                log.warning("pushing subscription notifications failed", exc_info=True)

    def _checkpoints(self, whole: bool) -> tuple[set[int], set[int]]:
        """The subscriptions whose checkpoints this batch stores and the partitions whose
        book of open offers it stores: a round's next slice (a round starts when one is
        due), or with ``whole`` all of them. The live watches of a partition whose book is
        stored are all stored with it: a live watch's snapshot leaves the offers out and
        is restored with its partition's book at its cursor (``watches.Books``), which this
        batch moves."""
        if whole:
            self._round = None
            return set(self.followed), set(self.held)
        if self._round is None and self._round_due(timed=True):
            self._round = self._round_new()
            self._since_checkpoint = 0
            self._checkpointed = self.clock()
        if self._round is None:
            return set(), set()
        stored, books = self._round.take(self._round_pace(self._round))
        if not self._round.pieces:
            self._round = None
        hub, count = self.watches, self.count  # (a subscription's partition: id % count)
        books |= {sub_id % count for sub_id in stored if sub_id in hub}
        if books:
            stored |= {i for i in cast(dict[int, Any], hub.subs) if i % count in books}
        return stored, books

    def _round_pace(self, round_: Round) -> int:
        """How many snapshots this batch stores of ``round_``: as many as the time since its
        last slice is of its spread, at least one, at most ``checkpoint_slice``. At 50
        events a second a round of 15,000 over 30 s is 10 a batch (a few milliseconds)
        rather than 100 (20 to 50 ms) in the 150 batches that follow one another at once."""
        now = self.clock()
        elapsed, round_.at = now - round_.at, now
        if self.checkpoint_spread <= 0:
            return self.checkpoint_slice
        due = math.ceil(round_.size * elapsed / self.checkpoint_spread)
        return max(1, min(self.checkpoint_slice, due))

    def _round_new(self) -> Round:
        """A checkpoint round over what the process follows now (``Round``): each held
        partition's other subscriptions as one piece (``take`` cuts it as batches have
        room), then its live watches with its book."""
        pieces: list[tuple[int, list[int], bool]] = []
        for p in sorted(self.held):
            watches: list[int] = []
            others: list[int] = []
            for f in self._partitions.get(p, {}).values():
                (watches if f.live and f.sub_id in self.watches else others).append(f.sub_id)
            if others:
                pieces.append((p, sorted(others), False))
            # last: the partition's row then says when its round ended (its checkpoint age)
            pieces.append((p, sorted(watches), True))
        return Round(deque(pieces), sum(len(p[1]) for p in pieces), self.clock())

    def _row(self, f: Followed, state: str, last_n: int, upto: int, checkpoint: bool) -> Row:
        """What the commit writes to ``f``'s row (locked: ``state``, ``last_n``)."""
        member = f.member
        row = Row(f.sub_id, last_n + len(f.found))
        if member.failed is not None:
            log.warning(
                "subscription %s failed at seq %s",
                f.sub_id,
                member.failed.seq,
                exc_info=member.failed.error,
            )
            error = {"error": "runtime_error", "message": _failure_text(member.failed.error)}
            f.found.append((member.failed.seq, error))
            row.last_n += 1
            row.state, row.reason = Subscription.State.SUSPENDED, "error"
        elif member.sub.suspended:
            row.state, row.reason = Subscription.State.SUSPENDED, "state_limit"
        elif member.sub.finished:
            row.state, row.reason = Subscription.State.DONE, "completed"
        else:
            row.state = state
            if (checkpoint or state == PAUSED) and not _lent(f):
                sub = self._set_of(f).subscription(f.sub_id) if f.live else member.sub
                if f.live and not checkpoint and f.sub_id in self.watches:
                    sub = self.watches.detached(f.sub_id)  # no book is stored with it
                if not f.live:
                    row.cursor = member.cursor
                else:
                    row.cursor = f.lane.cursor if f.lane is not None else upto
                row.evaluator = evaluator_dump(sub)
                row.checkpoint_n = row.last_n - f.skip
        return row


def _pushed(sub_id: int, first: int, found: list[tuple[int | None, Any]], end: bool) -> list[dict]:
    """The ``sub:<id>`` messages of a commit's notifications of ``sub_id``, numbered from
    ``first``, the last one with ``end``."""
    notes = [notification_json(n, seq, data) for n, (seq, data) in enumerate(found, first)]
    return [message for _, message in _messages(sub_id, notes, end=end)]


def _lent(f: Followed) -> bool:
    """Whether ``f`` is a watch joiner over a book of open offers held by many (a
    checkpoint's, or the one the catching-up watches follow, ``hosted.advance_watches``):
    its row keeps the checkpoint it has rather than one with its own copy of the book
    (issue 35: a thousand such copies of 10,000 offers went past PostgreSQL's 1 GB
    message). The notifications are the same whatever it restarts from; the cost is the
    replay. A watch registered in this process restarts from its registration, as it
    would anyway; one restored mid-history over a partition's book restarts from the
    start of the log once that book has moved on to a later checkpoint (``Books.at``
    finds another cursor): a second failover during a long catch-up replays more."""
    engine = f.member.sub.engine
    return not f.live and isinstance(engine, WatchEngine) and engine.borrowed


def _restored(row: Subscription, books: Books) -> tuple[Evaluator, int, int]:
    """The evaluator of ``row``'s checkpoint, the cursor it stands at and the outputs it
    had given. A snapshot of another version (or a pickle of before snapshots, or a watch's
    without the book of its cursor) is rebuilt: the evaluator as registered, at its first
    cursor, having given none (the replay drops the ``last_n`` in the outbox)."""
    assert row.evaluator is not None  # an active row has one (a constraint)
    try:
        offers = functools.partial(books.at, row.pk, row.cursor)
        evaluator = _state_load(row.evaluator, offers=offers)
        engine = evaluator.engine
        if isinstance(engine, WatchEngine) and engine.registered and not engine.whole:
            # Its own offers, perhaps its subject's only (a joiner fed in a
            # ``SubscriptionSet``, before ``hosted.advance_watches``): not a book the others
            # may take up (``advance_watches``, ``WatchHub.add``).
            raise SnapshotStale("a registered watch with open offers of its subject only")
        return evaluator, row.cursor, row.checkpoint_n
    except SnapshotStale as stale:
        log.info("subscription %s: %s; rebuilt by replay", row.pk, stale)
    evaluator, cursor = subscription_rebuilt(query=row.query, now=row.now, seam=row.seam)
    return evaluator, cursor, 0


def _advance(members: list[Member], events: list[LogEvent], *, upto: int) -> None:
    """``members`` fed ``events`` up to ``upto``: the watches over one book of open offers
    for all of them (``hosted.advance_watches``), the others by ``advance_members``."""
    watches = [m for m in members if hosted(m.sub)]
    if len(watches) < len(members):
        others = [m for m in members if not hosted(m.sub)]
        advance_members(others, events, upto=upto)
    advance_watches(watches, events, upto=upto)


def _read(after: int, upto: int) -> list[LogEvent]:
    """The log's events in (after, upto] with their owners, each made an ``Event`` once."""
    return [
        (owner, event_from_dict(raw))
        for owner, raw in subscriptions_log_read(after=after, upto=upto)
    ]


def _tail(after: int, most: int) -> tuple[int, list[LogEvent]]:
    """The log's end and its events after ``after`` (at most ``most``), as ``_read`` gives
    them, in one statement (``subscriptions_log_tail``): a batch's read."""
    end, rows = subscriptions_log_tail(after=after, most=most)
    return end, [(owner, event_from_dict(raw)) for owner, raw in rows]


@contextlib.contextmanager
def _pipelined() -> Iterator[psycopg.Connection[Any]]:
    """A transaction on the connection's psycopg pipeline, its ``BEGIN`` and ``COMMIT`` sent
    with its statements (psycopg's ``transaction()`` syncs each alone: two more round trips
    a batch); rolled back if the block raises or a statement fails. Inside a transaction
    of Django's (a test's) it is a savepoint of Django's instead."""
    connection.ensure_connection()
    db = connection.connection
    assert db is not None
    if connection.in_atomic_block:
        with transaction.atomic(), db.pipeline():
            yield db
        return
    try:
        with db.pipeline():
            db.execute("BEGIN")
            yield db
            db.execute("COMMIT")
    except BaseException:
        if not db.closed:
            db.rollback()  # (nothing when the transaction is over)
        raise


class Notes:
    """A commit's notifications, as ``INSERT_NOTES`` takes them: one list a column, in the
    order they are added (a tuple a notification, then a list a column from them, cost a
    third more: ``ops/benchmarks/engine_batch.py --fanout``)."""

    __slots__ = ("ids", "ns", "seqs", "datas")

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.ns: list[int] = []
        self.seqs: list[int | None] = []
        self.datas: list[Any] = []

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, sub_id: int, first: int, found: list[tuple[int | None, Any]]) -> None:
        """``sub_id``'s notifications ``found`` (``(seq, data)``), numbered from ``first``."""
        for n, (seq, data) in enumerate(found, first):
            self.ids.append(sub_id)
            self.ns.append(n)
            self.seqs.append(seq)
            self.datas.append(data)


def _write(notes: Notes, rows: list[Row]) -> None:
    """The commit's notifications (one INSERT from arrays, in parts of at most
    ``ROWS_BYTES`` of data: ``note_parts``) and the rows ended, paused or checkpointed (one
    UPDATE, in parts of at most ``ROWS_BYTES`` of snapshots; the others' outbox lengths
    were written by ``NOTIFIED_ROWS``), sent in the commit's pipeline (a COPY cannot
    be), their values bound on the server in binary: Django's ``bulk_update`` builds a CASE
    per field and row, and Django's cursor quotes every array into the statement's text in
    Python (py-spy on the advance pass this replaced: more of it than the evaluation)."""
    assert connection.connection is not None
    cursor = psycopg.Cursor(connection.connection)
    for columns in note_parts(notes):
        cursor.execute(INSERT_NOTES, columns)
    for part in row_parts(rows):
        cursor.execute(
            UPDATE_ROWS,
            [
                [r.sub_id for r in part],
                [r.last_n for r in part],
                [r.state for r in part],
                [r.reason for r in part],
                [r.cursor for r in part],
                [_kept(r) for r in part],
                [r.checkpoint_n for r in part],
            ],
        )


def note_parts(notes: Notes, limit: int | None = None) -> list[list[Any]]:
    """``INSERT_NOTES``' parameters for ``notes``, in order: their ids, numbers and seqs
    (``int_array``), and their data as the text of one JSON array, in parts whose data come
    to at most ``limit`` bytes (``ROWS_BYTES``) each. Almost always one part, from one
    ``json.dumps`` (ASCII: its length is its bytes); past the limit each note's data is
    written alone to cut the parts, a note larger than the limit a part of its own."""
    limit = ROWS_BYTES if limit is None else limit
    if not notes:
        return []
    whole = json.dumps(notes.datas)
    if len(whole) <= limit:
        return [[int_array(notes.ids), int_array(notes.ns), int_array(notes.seqs), whole]]
    texts = [(i, json.dumps(data)) for i, data in enumerate(notes.datas)]
    parts = []
    for part in _parts(texts, lambda item: len(item[1]), limit):
        start, end = part[0][0], part[-1][0] + 1
        parts.append(
            [
                int_array(notes.ids[start:end]),
                int_array(notes.ns[start:end]),
                int_array(notes.seqs[start:end]),
                "[" + ",".join(text for _, text in part) + "]",
            ]
        )
    return parts


def int_array(values: list[int] | list[int | None]) -> str:
    """``values`` as a PostgreSQL array literal (``{1,2,NULL}``), for a ``%s::bigint[]``
    (or ``int[]``) parameter: ``str`` of an int is its digits, as ``array_in`` reads them."""
    if None in values:
        return "{" + ",".join("NULL" if v is None else str(v) for v in values) + "}"
    return "{" + ",".join(map(str, values)) + "}"


def _kept(row: Row) -> bytes | None:
    """The snapshot a row keeps: an active or paused subscription's, else none."""
    return row.evaluator if row.state in (ACTIVE, PAUSED) else None


# The most snapshot bytes one UPDATE binds: PostgreSQL refuses a message past 1 GB and
# closes the connection, so a checkpoint of many large snapshots in one statement failed
# every batch after it (seen at 10,000 subscriptions of ``alerts.py --bid-path``).
ROWS_BYTES = 64 * 1024 * 1024


def row_parts(rows: list[Row], limit: int | None = None) -> list[list[Row]]:
    """``rows`` in order, cut into parts whose snapshots come to at most ``limit`` bytes
    (``ROWS_BYTES``) each; a row larger than that alone is a part of its own."""
    return _parts(rows, lambda row: len(_kept(row) or b""), limit)


def _parts(items: list[T], size: Callable[[T], int], limit: int | None = None) -> list[list[T]]:
    """``items`` in order, cut into parts of at most ``limit`` bytes (``ROWS_BYTES``) each,
    ``size`` giving an item's; an item larger than that alone is a part of its own."""
    limit = ROWS_BYTES if limit is None else limit
    parts: list[list[T]] = []
    total = 0
    for item in items:
        n = size(item)
        if not parts or (total + n > limit and parts[-1]):
            parts.append([])
            total = 0
        parts[-1].append(item)
        total += n
    return parts
