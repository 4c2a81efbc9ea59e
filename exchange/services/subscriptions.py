"""Live subscriptions (SPEC 8.3): registering, ending, and advancing them over the log.

Registration fixes the seam. It locks the log's counter row, the lock every writer of the
log holds from numbering its events to its commit, so no append is half done: the
counter's ``last_seq`` is the seam (every event up to it is committed, every later one
will be pushed live), and ``NOW`` is taken just after the last event's time. It also moves
the counter's time up to ``NOW``, so every later event has ``time >= NOW``. Hence, for this
subscription, "in the log at registration" (``seq <= seam``) and "before ``NOW``" (the
offline contract's history) are the same events, and the live path gives exactly what
``subscription_run`` gives on the log with ``--now NOW``.

Advancing is the subscription engine's (``exchange/subscription_engine``, issue 35):
long-lived processes that keep the evaluators in memory and commit each batch's
notifications with their cursors. This module wakes them (``subscriptions_advance_request``
after an append, ``subscriptions_changed_request`` after a registration, pause, resume or
deletion) and gives them the helpers both sides share (the evaluator's stored state, the
notifications' COPY, the stream's messages).

The evaluator's state is stored as an explicit, versioned snapshot of plain data
(``matching/subscriptions/run/snapshot.py``): the query is parsed and compiled again on load, so
no code (a form 3 pattern's compiled closures) is stored. A checkpoint of another version
(or a pickle of the releases before snapshots) is rebuilt by replay
(``subscription_rebuilt``).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction

from exchange.errors import Conflict, InvalidInput, NotFound
from exchange.models import Subscription, SubscriptionNotification
from exchange.realtime.streams import group_for, group_send_all
from exchange.redis_clients import redis_client
from exchange.selectors.subscriptions import (
    evaluator_start,
    log_seq_before,
    notification_json,
    subscription_active_count,
    subscription_query_parsed,
)
from exchange.services.side_effects import after_commit
from matching.subscriptions import STATE_LIMIT as EVALUATOR_STATE_LIMIT
from matching.subscriptions import End, Notification, Query, parse_query, to_text
from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions.run.snapshot import snapshot_dump, snapshot_load
from matching.subscriptions.watches.offers import OpenOffers

log = logging.getLogger(__name__)

# The evaluator's bound on kept state (tests lower it).
STATE_LIMIT = EVALUATOR_STATE_LIMIT
# Active subscriptions one user may hold.
MAX_ACTIVE = 100
# Events of its history the engine feeds a joining subscription per batch (a long history
# is replayed slice after slice between live batches).
CHUNK = 5000
MAX_NAME = 100
# Notifications one channel message carries at most.
PER_MESSAGE = 100


def stream_name(subscription_id: int) -> str:
    return f"sub:{subscription_id}"


def _state_dump(evaluator: Evaluator) -> bytes:
    return evaluator_dump(evaluator)


def evaluator_dump(evaluator: Evaluator) -> bytes:
    """The evaluator's state as ``_state_load`` reads it: its snapshot (plain data)."""
    return snapshot_dump(evaluator)


def _state_load(
    raw: bytes | memoryview, *, offers: Callable[[], OpenOffers | None] | None = None
) -> Evaluator:
    """The evaluator a stored state holds (``offers``: the shared open offers a watch's
    checkpoint may have left out, ``snapshot_load``). ``SnapshotStale`` (a checkpoint of
    another version, a pickle of before snapshots, a watch without its offers): rebuild it
    with ``subscription_rebuilt``; ``SnapshotError``: the bytes are no snapshot."""
    return snapshot_load(bytes(raw), offers=offers)


def _replay_start(
    evaluator: Evaluator,
    *,
    seam: int,
    now: dt.datetime,
    known: dict[dt.datetime, int | None] | None = None,
) -> int:
    """Where a subscription registered at ``seam`` and ``now`` starts reading the log: just
    before the first event its history can take part in, never after the seam. ``known``:
    the answers already read under the same seam (a bulk registration's), by start."""
    start = evaluator_start(evaluator)
    if start >= now:
        before = None
    elif known is not None and start in known:
        before = known[start]
    else:
        before = log_seq_before(time=start)
        if known is not None:
            known[start] = before
    return seam if before is None else min(before, seam)


def subscription_rebuilt(*, query: str, now: dt.datetime, seam: int) -> tuple[Evaluator, int]:
    """The evaluator of a subscription as registration made it, and the cursor it started
    at: fed the log from there (the outputs already in the outbox dropped), it reaches
    what any checkpoint of it held, since the evaluator is deterministic. For a stored
    state that cannot be loaded (``SnapshotStale``)."""
    evaluator = Evaluator(parse_query(query), now=now, state_limit=STATE_LIMIT)
    return evaluator, _replay_start(evaluator, seam=seam, now=now)


def _seam_locked() -> tuple[int, dt.datetime]:
    """Lock the log's counter row until commit; the seam and ``NOW`` (see the module
    docstring). The counter's time becomes ``NOW``, so later events are not earlier."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO exchange_eventcounter (id, last_seq, best_change_id) VALUES (1, 0, 0) "
            "ON CONFLICT (id) DO NOTHING"
        )
        cursor.execute(
            "SELECT last_seq, greatest(last_time + interval '1 microsecond', clock_timestamp()) "
            "FROM exchange_eventcounter WHERE id = 1 FOR UPDATE"
        )
        row = cursor.fetchone()
        assert row is not None
        cursor.execute("UPDATE exchange_eventcounter SET last_time = %s WHERE id = 1", [row[1]])
    return row[0], row[1]


@dataclass(frozen=True)
class _Registered:
    """What registering one query at ``seam`` and ``now`` writes: the row's fields and its
    first notifications (a function of the query's text, ``seam`` and ``now`` alone, so a
    bulk registration computes it once per distinct query)."""

    kind: str
    query: str
    state: str
    reason: str
    cursor: int
    evaluator: bytes | None
    notes: list[dict[str, Any]]


def _registered(
    parsed: Query,
    *,
    seam: int,
    now: dt.datetime,
    known: dict[dt.datetime, int | None] | None = None,
) -> _Registered:
    """Registration's evaluator for ``parsed`` at ``seam`` and ``now``: where its replay
    starts and, with no history to replay, what ending its history gives at once (a
    watch's first answer, SPEC 8.3; an end at or before ``NOW`` completes it)."""
    evaluator = Evaluator(parsed, now=now, state_limit=STATE_LIMIT)
    cursor = _replay_start(evaluator, seam=seam, now=now, known=known)
    state, reason = Subscription.State.ACTIVE, ""
    outputs = evaluator.history_done() if cursor >= seam else []
    notes = [notification_json(o.n, o.seq, o.data) for o in outputs if isinstance(o, Notification)]
    if any(isinstance(o, End) for o in outputs):
        state, reason = Subscription.State.DONE, "completed"
    return _Registered(
        kind=parsed.kind.value,
        query=to_text(parsed),
        state=state,
        reason=reason,
        cursor=cursor,
        evaluator=_state_dump(evaluator) if state == Subscription.State.ACTIVE else None,
        notes=notes,
    )


def _name_checked(name: Any) -> None:
    if not isinstance(name, str) or len(name) > MAX_NAME:
        raise InvalidInput(
            "invalid_name", f"name is text of at most {MAX_NAME} characters.", field="name"
        )


def _room_checked(owner: User, adding: int) -> None:
    """``too_many_subscriptions`` unless ``owner`` may hold ``adding`` more (under the
    counter's lock, so the count cannot race)."""
    if subscription_active_count(owner=owner) + adding > MAX_ACTIVE:
        raise InvalidInput(
            "too_many_subscriptions",
            f"A user may have at most {MAX_ACTIVE} active or paused subscriptions; "
            "delete one first.",
        )


# A bulk registration's rows: their ids drawn first (so each row's id is known in order),
# then one INSERT of them all, the values bound on the server in binary (as the engine's
# writes: Django's ``bulk_create`` compiled 100 rows with their snapshots in 100 ms).
NEXT_IDS = (
    "SELECT nextval(pg_get_serial_sequence('exchange_subscription', 'id')) "
    "FROM generate_series(1, %s)"
)
INSERT_ROWS = (
    "INSERT INTO exchange_subscription (id, owner_id, name, kind, query, state, reason, "
    'created_at, "now", seam, "cursor", last_n, checkpoint_n, evaluator) '
    "SELECT v.id, %b, v.name, v.kind, v.query, v.state, v.reason, %b, %b, %b, v.cursor, "
    "v.last_n, v.last_n, v.evaluator FROM unnest(%b::bigint[], %b::text[], %b::text[], "
    "%b::text[], %b::text[], %b::text[], %b::bigint[], %b::int[], %b::bytea[]) "
    "AS v(id, name, kind, query, state, reason, cursor, last_n, evaluator)"
)


def _rows_create(
    owner: User, registered: list[tuple[str, _Registered]], *, seam: int, now: dt.datetime
) -> list[Subscription]:
    """The rows (one INSERT), their first notifications and messages, and the engine's
    wake-up after commit (inside the caller's transaction)."""
    with connection.cursor() as cursor:
        cursor.execute(NEXT_IDS, [len(registered)])
        ids = [row[0] for row in cursor.fetchall()]
    rows = [
        Subscription(
            id=pk,
            owner=owner,
            name=name,
            kind=r.kind,
            query=r.query,
            state=r.state,
            reason=r.reason,
            created_at=now,
            now=now,
            seam=seam,
            cursor=r.cursor,
            last_n=len(r.notes),
            checkpoint_n=len(r.notes),
            evaluator=r.evaluator,
        )
        for pk, (name, r) in zip(ids, registered, strict=True)
    ]
    connection.ensure_connection()
    assert connection.connection is not None
    with connection.connection.cursor() as cursor:
        cursor.execute(
            INSERT_ROWS,
            [
                owner.pk,
                now,
                now,
                seam,
                ids,
                [row.name for row in rows],
                [row.kind for row in rows],
                [row.query for row in rows],
                [row.state for row in rows],
                [row.reason for row in rows],
                [row.cursor for row in rows],
                [row.last_n for row in rows],
                [row.evaluator for row in rows],
            ],
        )
    for row in rows:
        row._state.adding = False  # as saved
    notes = [
        SubscriptionNotification(subscription=row, **note)
        for row, (_, r) in zip(rows, registered, strict=True)
        for note in r.notes
    ]
    if notes:
        SubscriptionNotification.objects.bulk_create(notes)
        messages = [
            message
            for row, (_, r) in zip(rows, registered, strict=True)
            if r.notes
            for message in _messages(row.pk, r.notes, end=r.state == Subscription.State.DONE)
        ]
        after_commit("sending a registration's notifications", lambda: group_send_all(messages))
    if any(r.state == Subscription.State.ACTIVE for _, r in registered):
        after_commit("advancing a new subscription", subscriptions_changed_request)
    return rows


def subscription_create(*, owner: User, query: str, name: str = "") -> Subscription:
    """Register ``query`` for ``owner``: parsed (``InvalidInput`` with the error's code and
    position, nothing stored), at most ``MAX_ACTIVE`` active or paused per user
    (``too_many_subscriptions``). Its history is replayed by the engine, woken after
    commit. With no history to replay its history is over at once: what that gives (a
    watch's first answer, SPEC 8.3) goes to the outbox now, and an end at or before ``NOW``
    completes it."""
    parsed = subscription_query_parsed(text=query)
    _name_checked(name)
    with transaction.atomic():
        # Every registration takes the counter's lock, so the count below cannot race.
        seam, now = _seam_locked()
        _room_checked(owner, 1)
        registered = _registered(parsed, seam=seam, now=now)
        (subscription,) = _rows_create(owner, [(name, registered)], seam=seam, now=now)
    return subscription


def subscriptions_create_many(
    *, owner: User, queries: list[str], names: list[str] | None = None
) -> list[Subscription]:
    """Register ``queries`` for ``owner`` together, all or none: one transaction, one seam
    and ``NOW`` for all, one multi-row INSERT, and the evaluator of each distinct query
    built once (what ``subscription_create`` writes for each, registered at that one
    instant). A bad query is ``InvalidInput`` naming its index (field ``queries[i]``);
    past ``MAX_ACTIVE`` with the owner's others, ``too_many_subscriptions``; nothing is
    stored then."""
    names = [""] * len(queries) if names is None else names
    if len(names) != len(queries):
        raise InvalidInput("invalid_name", "names must be one per query.", field="names")
    parsed: dict[str, Query] = {}
    for i, text in enumerate(queries):
        _name_checked(names[i])
        if text not in parsed:
            try:
                parsed[text] = subscription_query_parsed(text=text)
            except InvalidInput as exc:
                exc.field = f"queries[{i}]"
                raise
    with transaction.atomic():
        seam, now = _seam_locked()
        _room_checked(owner, len(queries))
        known: dict[dt.datetime, int | None] = {}
        built = {
            text: _registered(q, seam=seam, now=now, known=known) for text, q in parsed.items()
        }
        return _rows_create(
            owner,
            [(name, built[text]) for name, text in zip(names, queries, strict=True)],
            seam=seam,
            now=now,
        )


def _owned_locked(*, owner: User, subscription_id: int) -> Subscription:
    """``owner``'s subscription, locked until commit; ``NotFound`` for anyone else's. The
    lock serializes the changes of one subscription; the engine's commit locks the row too
    and writes nothing for one that ended meanwhile."""
    subscription = (
        Subscription.objects.select_for_update().filter(owner=owner, id=subscription_id).first()
    )
    if subscription is None:
        raise NotFound("not_found", f"You have no subscription {subscription_id}.")
    return subscription


def _not_ended(subscription: Subscription, verb: str) -> None:
    if subscription.state in (Subscription.State.DONE, Subscription.State.SUSPENDED):
        raise Conflict(
            f"subscription_{subscription.state}",
            f"Subscription {subscription.pk} is {subscription.state} "
            f"({subscription.reason or 'no reason'}); "
            f"only an active or paused subscription can be {verb}.",
        )


def subscription_delete(*, owner: User, subscription_id: int) -> Subscription:
    """End ``owner``'s subscription (``NotFound`` for anyone else's), active or paused: it
    becomes ``done``
    (reason ``deleted``) and sends nothing more; its outbox stays readable. Ending one that
    has ended already changes nothing."""
    with transaction.atomic():
        subscription = _owned_locked(owner=owner, subscription_id=subscription_id)
        if subscription.state in (Subscription.State.ACTIVE, Subscription.State.PAUSED):
            subscription.state = Subscription.State.DONE
            subscription.reason = "deleted"
            subscription.evaluator = None
            subscription.save(update_fields=["state", "reason", "evaluator"])
            messages = _messages(subscription.pk, [], end=True)
            after_commit("ending a subscription's stream", lambda: group_send_all(messages))
            after_commit("telling the engine of a deletion", subscriptions_changed_request)
    return subscription


def _state_move(*, owner: User, subscription_id: int, to: str, verb: str) -> Subscription:
    """Move ``owner``'s subscription between active and paused (to ``to``); already there,
    nothing changes; an ended one is a ``Conflict``. A change is told to the engine."""
    with transaction.atomic():
        subscription = _owned_locked(owner=owner, subscription_id=subscription_id)
        _not_ended(subscription, verb)
        if subscription.state != to:
            subscription.state = to
            subscription.save(update_fields=["state"])
            after_commit(
                f"telling the engine of a subscription {verb}", subscriptions_changed_request
            )
    return subscription


def subscription_pause(*, owner: User, subscription_id: int) -> Subscription:
    """Stop advancing ``owner``'s active subscription: it becomes ``paused`` and keeps its
    cursor, its evaluator and its outbox, so ``subscription_resume`` goes on exactly where
    it stopped. Pausing a paused one changes nothing; a done or suspended one is a
    ``Conflict`` (``subscription_done``, ``subscription_suspended``) and stays as it is."""
    return _state_move(
        owner=owner, subscription_id=subscription_id, to=Subscription.State.PAUSED, verb="paused"
    )


def subscription_resume(*, owner: User, subscription_id: int) -> Subscription:
    """Advance ``owner``'s paused subscription again, from its cursor: the events appended
    while it was paused are read in ``seq`` order as live ones, each once (numbered on from
    its last ``n``). Resuming an active one changes nothing; a done or suspended one is a
    ``Conflict`` as for ``subscription_pause``."""
    return _state_move(
        owner=owner, subscription_id=subscription_id, to=Subscription.State.ACTIVE, verb="resumed"
    )


def _failure_text(exc: Exception) -> str:
    detail = str(exc)[:200]
    return f"the subscription failed while evaluating: {type(exc).__name__}" + (
        f": {detail}" if detail else ""
    )


def _outputs(outputs: list[Notification | End]) -> list[tuple[int | None, Any]]:
    return [(o.seq, o.data) for o in outputs if isinstance(o, Notification)]


def _messages(subscription_id: int, notes: list[dict[str, Any]], *, end: bool) -> list:
    """Channel messages for the ``sub:<id>`` stream's group: runs of consecutive
    notifications (``first``-``last``, so a follower can tell a missed run), the last one
    carrying ``end``."""
    group = group_for(stream_name(subscription_id))
    runs = [notes[i : i + PER_MESSAGE] for i in range(0, len(notes), PER_MESSAGE)] or [[]]
    return [
        (
            group,
            {
                "type": "sub.notifications",
                "stream": stream_name(subscription_id),
                "first": run[0]["n"] if run else None,
                "last": run[-1]["n"] if run else None,
                "notifications": run,
                "end": end and i == len(runs) - 1,
            },
        )
        for i, run in enumerate(runs)
    ]


# The Redis channel that wakes the subscription engine's processes: "log" after an append,
# "subscriptions" after a registration, pause, resume or deletion (they then look for the
# changed rows).
ENGINE_WAKE_CHANNEL = "intersect:subscription-engine"
WAKE_LOG = "log"
WAKE_SUBSCRIPTIONS = "subscriptions"


def subscriptions_advance_request() -> None:
    """After a commit that appended events: wake the engine's processes. Without Redis it
    raises; the caller's after-commit guard logs it, and the engine's polling catches up."""
    redis_client().publish(ENGINE_WAKE_CHANNEL, WAKE_LOG)


def subscriptions_changed_request() -> None:
    """After a commit that registered, paused, resumed or deleted a subscription: the
    engine's processes look for the changed rows."""
    redis_client().publish(ENGINE_WAKE_CHANNEL, WAKE_SUBSCRIPTIONS)
