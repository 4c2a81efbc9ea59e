"""Live subscriptions (SPEC 8.3): registering, ending, and advancing them over the log.

Registration fixes the seam. It locks the log's counter row, the lock every writer of the
log holds from numbering its events to its commit, so no append is half done: the
counter's ``last_seq`` is the seam (every event up to it is committed, every later one
will be pushed live), and ``NOW`` is taken just after the last event's time. It also moves
the counter's time up to ``NOW``, so every later event has ``time >= NOW``. Hence, for this
subscription, "in the log at registration" (``seq <= seam``) and "before ``NOW``" (the
offline contract's history) are the same events, and the live path gives exactly what
``subscription_run`` gives on the log with ``--now NOW``.

Advancing (``subscription_advance``, run by a Celery task on the default queue): the row
is locked with ``SKIP LOCKED`` (one worker per subscription; others move on to other
subscriptions), the events its owner may see after its cursor are read in bounded chunks
and fed to the one evaluator (up to the seam as history, ``history_done`` at the seam, then
live), and in the same transaction the notifications (consecutive ``n``), the new cursor and
the evaluator's state are written. A worker that dies before the commit leaves the row and
its outbox as they were, so the step is redone with the same result: nothing is lost or
sent twice. After the commit the notifications go to the ``sub:<id>`` stream's group.

The evaluator's state is stored as an explicit, versioned snapshot of plain data
(``matching/subscriptions/snapshot.py``): the query is parsed and compiled again on load, so
no code (a form 3 pattern's compiled closures) is stored. A checkpoint of another version
(or a pickle of the releases before snapshots) is rebuilt by replay
(``subscription_rebuilt``).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction

from exchange.errors import Conflict, InvalidInput, NotFound
from exchange.models import Subscription, SubscriptionNotification
from exchange.realtime.streams import group_for, group_send_all
from exchange.redis_clients import redis_client
from exchange.selectors.events import events_log_end
from exchange.selectors.subscriptions import (
    evaluator_start,
    log_seq_before,
    notification_json,
    subscription_active_count,
    subscription_log_read,
    subscription_query_parsed,
    subscriptions_behind,
)
from exchange.services.side_effects import after_commit
from matching.subscriptions import STATE_LIMIT as EVALUATOR_STATE_LIMIT
from matching.subscriptions import End, Notification, parse_query, to_text
from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions.snapshot import snapshot_dump, snapshot_load

log = logging.getLogger(__name__)

# The evaluator's bound on kept state (tests lower it).
STATE_LIMIT = EVALUATOR_STATE_LIMIT
# Active subscriptions one user may hold.
MAX_ACTIVE = 100
# Events one step feeds one subscription (a long history is replayed step after step).
CHUNK = 5000
# Subscriptions one call of ``subscriptions_advance`` looks at before it returns.
ROUND = 200
MAX_NAME = 100
COPY_NOTIFICATIONS = (
    "COPY exchange_subscriptionnotification (subscription_id, n, seq, data, created_at) FROM STDIN"
)
# Notifications one channel message carries at most.
PER_MESSAGE = 100
# Seconds the advance request's key lives (``advance_pending_key``).
PENDING_TTL = 10


def stream_name(subscription_id: int) -> str:
    return f"sub:{subscription_id}"


def _state_dump(evaluator: Evaluator) -> bytes:
    return evaluator_dump(evaluator)


def evaluator_dump(evaluator: Evaluator) -> bytes:
    """The evaluator's state as ``_state_load`` reads it: its snapshot (plain data)."""
    return snapshot_dump(evaluator)


def _state_load(raw: bytes | memoryview) -> Evaluator:
    """The evaluator a stored state holds. ``SnapshotStale`` (a checkpoint of another
    version, or a pickle of before snapshots): rebuild it with ``subscription_rebuilt``;
    ``SnapshotError``: the bytes are no snapshot."""
    return snapshot_load(bytes(raw))


def _replay_start(evaluator: Evaluator, *, seam: int, now: dt.datetime) -> int:
    """Where a subscription registered at ``seam`` and ``now`` starts reading the log: just
    before the first event its history can take part in, never after the seam."""
    start = evaluator_start(evaluator)
    before = None if start >= now else log_seq_before(time=start)
    return seam if before is None else min(before, seam)


def subscription_rebuilt(*, query: str, now: dt.datetime, seam: int) -> tuple[Evaluator, int]:
    """The evaluator of a subscription as registration made it, and the cursor it started
    at: fed the log from there (the outputs already in the outbox dropped), it reaches
    what any checkpoint of it held, since the evaluator is deterministic. For a stored
    state that cannot be loaded (``SnapshotStale``)."""
    evaluator = Evaluator(parse_query(query), now=now, state_limit=STATE_LIMIT)
    return evaluator, _replay_start(evaluator, seam=seam, now=now)


def notifications_copy(cursor: Any, notes: list[tuple[int, int, int | None, str]]) -> None:
    """Write ``notes`` (subscription id, ``n``, ``seq``, JSON data) with one COPY on the
    psycopg ``cursor`` (the advance pass and the engine: many subscriptions' notifications
    at once); ``created_at`` is the transaction's time, as ``now()`` in an INSERT gives."""
    if not notes:
        return
    cursor.execute("SELECT now()")
    (now,) = cursor.fetchone() or (None,)
    with cursor.copy(COPY_NOTIFICATIONS) as copy:
        for note in notes:
            copy.write_row((*note, now))


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


def subscription_create(*, owner: User, query: str, name: str = "") -> Subscription:
    """Register ``query`` for ``owner``: parsed (``InvalidInput`` with the error's code and
    position, nothing stored), at most ``MAX_ACTIVE`` active or paused per user
    (``too_many_subscriptions``). Its history is replayed by the advance task, asked for
    after commit."""
    parsed = subscription_query_parsed(text=query)
    if not isinstance(name, str) or len(name) > MAX_NAME:
        raise InvalidInput(
            "invalid_name", f"name is text of at most {MAX_NAME} characters.", field="name"
        )
    with transaction.atomic():
        # Every registration takes the counter's lock, so the count below cannot race.
        seam, now = _seam_locked()
        if subscription_active_count(owner=owner) >= MAX_ACTIVE:
            raise InvalidInput(
                "too_many_subscriptions",
                f"A user may have at most {MAX_ACTIVE} active or paused subscriptions; "
                "delete one first.",
            )
        evaluator = Evaluator(parsed, now=now, state_limit=STATE_LIMIT)
        cursor = _replay_start(evaluator, seam=seam, now=now)
        state, reason = Subscription.State.ACTIVE, ""
        if cursor >= seam and any(isinstance(o, End) for o in evaluator.history_done()):
            # No history to replay and an end at or before NOW: complete already.
            state, reason = Subscription.State.DONE, "completed"
        subscription = Subscription.objects.create(
            owner=owner,
            name=name,
            kind=parsed.kind.value,
            query=to_text(parsed),
            state=state,
            reason=reason,
            created_at=now,
            now=now,
            seam=seam,
            cursor=cursor,
            evaluator=_state_dump(evaluator) if state == Subscription.State.ACTIVE else None,
        )
        if state == Subscription.State.ACTIVE:
            after_commit("advancing a new subscription", subscriptions_changed_request)
    return subscription


def _owned_locked(*, owner: User, subscription_id: int) -> Subscription:
    """``owner``'s subscription, locked until commit; ``NotFound`` for anyone else's. The
    lock waits for a worker's step on it, so a pause never lands inside a step."""
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
            if settings.SUBSCRIPTION_ENGINE:
                after_commit("telling the engine of a deletion", subscriptions_changed_request)
    return subscription


def _state_move(*, owner: User, subscription_id: int, to: str, verb: str) -> Subscription:
    """Move ``owner``'s subscription between active and paused (to ``to``); already there,
    nothing changes; an ended one is a ``Conflict``. Reactivated, it asks for an advance."""
    with transaction.atomic():
        subscription = _owned_locked(owner=owner, subscription_id=subscription_id)
        _not_ended(subscription, verb)
        if subscription.state != to:
            subscription.state = to
            subscription.save(update_fields=["state"])
            if to == Subscription.State.ACTIVE:
                after_commit("advancing a resumed subscription", subscriptions_changed_request)
            elif settings.SUBSCRIPTION_ENGINE:
                after_commit("telling the engine of a pause", subscriptions_changed_request)
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


@dataclass(frozen=True)
class Step:
    """What one step did: the notifications written, whether it ended the subscription and
    whether the log holds more for it."""

    written: int
    ended: bool
    more: bool


def subscription_advance(*, subscription_id: int, chunk: int = CHUNK) -> Step | None:
    """Feed the subscription the next (at most ``chunk``) events of the log after its
    cursor; None if it is not active or another worker holds it. One transaction."""
    with transaction.atomic():
        subscription = (
            # of=self: the owner's row is read, not locked (a login must not wait for us)
            Subscription.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(id=subscription_id, state=Subscription.State.ACTIVE)
            .select_related("owner")
            .first()
        )
        if subscription is None:
            return None
        log_end = events_log_end()
        upto = min(log_end, subscription.cursor + chunk)
        rows, finished, reason = _feed(subscription, upto)
        first = subscription.last_n + 1
        SubscriptionNotification.objects.bulk_create(
            SubscriptionNotification(subscription=subscription, n=n, seq=seq, data=data)
            for n, (seq, data) in enumerate(rows, first)
        )
        subscription.last_n += len(rows)
        subscription.checkpoint_n = subscription.last_n  # every step stores the state
        subscription.cursor = upto
        fields = ["last_n", "checkpoint_n", "cursor", "evaluator"]
        if finished is not None:
            subscription.state = finished
            subscription.reason = reason
            subscription.evaluator = None
            fields += ["state", "reason"]
        ended = finished == Subscription.State.DONE
        subscription.save(update_fields=fields)
        if rows or ended:
            messages = _messages(
                subscription.pk,
                [notification_json(n, seq, data) for n, (seq, data) in enumerate(rows, first)],
                end=ended,
            )
            after_commit("pushing subscription notifications", lambda: group_send_all(messages))
    return Step(len(rows), finished is not None, finished is None and upto < log_end)


def _feed(
    subscription: Subscription, upto: int
) -> tuple[list[tuple[int | None, Any]], str | None, str]:
    """Run the evaluator over the owner's events in (cursor, upto]; its outputs as
    (seq, data), and the state it left (None: still active) with the reason. The new
    evaluator state is put on the row. A failure of the evaluator suspends the subscription
    with an ``{"error": "runtime_error"}`` notification rather than failing the worker."""
    out: list[tuple[int | None, Any]] = []
    seq = subscription.cursor
    try:
        assert subscription.evaluator is not None  # an active row has one (a constraint)
        evaluator = _state_load(subscription.evaluator)
        events = subscription_log_read(owner=subscription.owner, after=seq, upto=upto)
        for event in events:
            seq = event["seq"]
            if seq > subscription.seam and not evaluator.live:
                out.extend(_outputs(evaluator.history_done()))
                if evaluator.finished:
                    break
            out.extend(_outputs(evaluator.push(event, live=seq > subscription.seam)))
            if evaluator.finished:
                break
        if not evaluator.finished and upto >= subscription.seam and not evaluator.live:
            out.extend(_outputs(evaluator.history_done()))
    except Exception as exc:  # noqa: BLE001 - one subscription's failure must not stop the rest
        log.warning("subscription %s failed at seq %s", subscription.pk, seq, exc_info=True)
        out.append((seq, {"error": "runtime_error", "message": _failure_text(exc)}))
        return out, Subscription.State.SUSPENDED, "error"
    if evaluator.suspended:
        return out, Subscription.State.SUSPENDED, "state_limit"
    if evaluator.finished:
        return out, Subscription.State.DONE, "completed"
    subscription.evaluator = _state_dump(evaluator)
    return out, None, ""


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


def subscriptions_advance(*, chunk: int = CHUNK, limit: int = ROUND) -> bool:
    """One step for each of up to ``limit`` active subscriptions behind the log; True if
    some still have more to read (the task then asks for another round)."""
    more = False
    ids = subscriptions_behind(log_end=events_log_end(), limit=limit)
    for subscription_id in ids:
        step = subscription_advance(subscription_id=subscription_id, chunk=chunk)
        more = more or (step is not None and step.more)
    return more or len(ids) == limit


# The advance task, asked for by name: the task module imports this one.
ADVANCE_TASK = "exchange.subscriptions_advance"


def advance_pending_key() -> str:
    """While this Redis key exists an advance task is queued and has not started reading,
    so a new request need not queue another (it expires on its own if that task is lost)."""
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}:subscriptions-pending"


# The Redis channel that wakes the subscription engine's processes: "log" after an append,
# "subscriptions" after a registration, pause, resume or deletion (they then look for the
# changed rows).
ENGINE_WAKE_CHANNEL = "intersect:subscription-engine"
WAKE_LOG = "log"
WAKE_SUBSCRIPTIONS = "subscriptions"


def subscriptions_advance_request() -> None:
    """Ask for an advance round after a commit that appended events, unless one is queued
    already; with the subscription engine on, wake its processes instead. Without Redis
    it raises; the caller's after-commit guard logs it and beat's round (or the engine's
    polling) catches up."""
    if settings.SUBSCRIPTION_ENGINE:
        redis_client().publish(ENGINE_WAKE_CHANNEL, WAKE_LOG)
    elif redis_client().set(advance_pending_key(), "1", nx=True, ex=PENDING_TTL):
        current_app.send_task(ADVANCE_TASK)


def subscriptions_changed_request() -> None:
    """After a commit that registered, paused, resumed or deleted a subscription: the
    engine's processes look for the changed rows; without the engine, an advance round is
    asked for (``subscriptions_advance_request``)."""
    if settings.SUBSCRIPTION_ENGINE:
        redis_client().publish(ENGINE_WAKE_CHANNEL, WAKE_SUBSCRIPTIONS)
    else:
        subscriptions_advance_request()
