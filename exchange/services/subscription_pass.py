"""Advancing many live subscriptions in one pass over the log (SPEC 8.3, issue 19's speed).

``subscription_advance`` (``services/subscriptions.py``) gives one subscription one step:
lock its row, read what its owner may see after its cursor, feed its evaluator, write its
notifications, cursor and state. With thousands of live subscriptions on a busy market,
doing that one by one reads the same events thousands of times and runs one evaluator loop
per subscription. A pass here does the same steps for many at once:

* the active subscriptions behind the log are taken by cursor into *stretches*: those
  whose cursors lie within one ``chunk`` of the stretch's lowest, so a live crowd (all at
  the log's end) is one stretch and a long replay another, never holding the live ones
  back;
* per stretch, one transaction: the rows are locked (``SKIP LOCKED``, as the single step
  does: a row another worker holds is left to it), the log after the lowest cursor is read
  once with each event's owner (``subscriptions_log_read``), and
  ``multi.advance_members`` feeds every subscription the events its owner may see after
  its own cursor (history up to its seam directly, live ones through one
  ``SubscriptionSet``, one walk of the matching index per event), then the notifications
  of all of them are written with consecutive ``n`` each, and every row's cursor and state;
* the channel messages go after the commit, as the single step sends them.

The evaluators stay in the worker's memory between passes (``_kept``), each with the
version of the stored state it is: the row's ``cursor`` and ``xmin`` (the transaction that
last wrote the row, which PostgreSQL changes on every update). A pass takes a kept
evaluator only while the locked row still has that version, so a row another process (or
the single step, a pause, a deletion) wrote since is read from its stored state, and a
restart starts from the stored ones. A kept evaluator is taken out before it is fed and put
back only after the commit, with the version this pass wrote: a rolled-back pass leaves
nothing behind that the database does not hold. The stored state is still written every
pass, for the others.

Each subscription's outbox, cursor, state and evaluator are exactly what its own steps
would have written over the same stretch (the evaluator is the same object, fed the same
events in the same order; a test compares hundreds of subscriptions of every form with
``subscription_run``). A worker that dies mid-pass rolls the stretch back; the next pass
redoes it. One subscription's failure suspends it (``runtime_error``) and not the others.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any, cast

from django.db import connection, transaction
from django.db.models.expressions import RawSQL

from exchange.models import Subscription
from exchange.realtime.streams import group_send_all
from exchange.selectors.events import events_log_end
from exchange.selectors.subscription_log import subscriptions_log_read
from exchange.selectors.subscriptions import notification_json
from exchange.services.side_effects import after_commit
from exchange.services.subscriptions import (
    CHUNK,
    _failure_text,
    _messages,
    _outputs,
    _state_load,
    evaluator_dump,
    notifications_copy,
)
from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions.multi import Failed, Member, advance_members

log = logging.getLogger(__name__)

# Active subscriptions one pass looks at (SPEC 8.3 allows 100 a user).
PASS_LIMIT = 20_000
# Evaluators kept in memory at most (the oldest kept go first).
KEPT_LIMIT = 2 * PASS_LIMIT

# The notifications of a stretch go in with one COPY and its rows change with one UPDATE,
# their values bound on the server in binary: Django's ``bulk_update`` builds a CASE per
# field and row, and Django's cursor quotes every array into the statement's text in Python
# (py-spy: more of the pass than the evaluation). ``created_at`` is the transaction's
# time, as ``now()`` in an INSERT would give.
UPDATE_ROWS = (
    'UPDATE exchange_subscription AS s SET last_n = v.last_n, checkpoint_n = v.last_n, "cursor" = v.cursor, '
    "evaluator = v.evaluator, state = v.state, reason = v.reason "
    "FROM unnest(%b::bigint[], %b::int[], %b::bigint[], %b::bytea[], %b::text[], %b::text[]) "
    "AS v(id, last_n, cursor, evaluator, state, reason) WHERE s.id = v.id "
    "RETURNING s.id, s.xmin::text"
)
# A row's version as a pass reads it under its lock (see the module docstring).
VERSION = RawSQL('"exchange_subscription".xmin::text', ())

Version = tuple[int, str]
# This process's evaluators by subscription id, with the version of the stored state each
# one is (``_take``, ``_keep``).
_kept: dict[int, tuple[Version, Evaluator]] = {}


def _take(sub_id: int, version: Version) -> Evaluator | None:
    """The kept evaluator of ``sub_id`` if it is the stored state of ``version``, taken out
    of ``_kept`` (it is about to be fed); None otherwise (and a stale one is dropped)."""
    kept = _kept.pop(sub_id, None)
    if kept is None or kept[0] != version:
        return None
    return kept[1]


def _keep(evaluators: dict[int, tuple[Version, Evaluator]]) -> None:
    """After the commit that stored them: keep ``evaluators`` for the next pass."""
    _kept.update(evaluators)
    while len(_kept) > KEPT_LIMIT:
        del _kept[next(iter(_kept))]


def subscriptions_advance_together(*, chunk: int = CHUNK, limit: int = PASS_LIMIT) -> bool:
    """One pass over up to ``limit`` active subscriptions behind the log, each moved on by
    at most ``chunk`` events; True if some still have more to read (the task then asks
    for another pass)."""
    log_end = events_log_end()
    behind = list(
        Subscription.objects.filter(state=Subscription.State.ACTIVE, cursor__lt=log_end)
        .order_by("cursor", "id")
        .values_list("id", "cursor")[:limit]
    )
    more = len(behind) == limit
    for ids in _stretches(behind, chunk):
        more = _advance_stretch(ids, log_end=log_end, chunk=chunk) or more
    return more


def _stretches(behind: list[tuple[int, int]], chunk: int) -> Iterator[list[int]]:
    """``behind`` (id, cursor), sorted by cursor, cut into runs whose cursors lie within
    ``chunk`` of the run's first."""
    run: list[int] = []
    start = 0
    for sub_id, cursor in behind:
        if run and cursor >= start + chunk:
            yield run
            run = []
        if not run:
            start = cursor
        run.append(sub_id)
    if run:
        yield run


def _advance_stretch(ids: list[int], *, log_end: int, chunk: int) -> bool:
    """One transaction: the subscriptions ``ids`` that this worker can lock, fed the log
    from their lowest cursor, at most ``chunk`` events; True if some have more to read."""
    with transaction.atomic():
        rows = list(
            # of=self: the owners' rows are read, not locked (a login must not wait for us)
            Subscription.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(id__in=ids, state=Subscription.State.ACTIVE, cursor__lt=log_end)
            .select_related("owner")
            .defer("evaluator")  # read only where no kept evaluator is this row's (below)
            .annotate(version=VERSION)
            .order_by("id")
        )
        if not rows:
            return False
        upto = min(log_end, min(row.cursor for row in rows) + chunk)
        rows = [row for row in rows if row.cursor < upto]  # moved on meanwhile: left as is
        evaluators = {row.pk: _take(row.pk, (row.cursor, row.version)) for row in rows}
        missing = [sub_id for sub_id, evaluator in evaluators.items() if evaluator is None]
        stored = dict(
            Subscription.objects.filter(id__in=missing).values_list("id", "evaluator")
            if missing
            else ()
        )
        members: list[Member] = []
        failures: dict[int, Failed] = {}
        for row in rows:
            try:
                evaluator = evaluators[row.pk]
                if evaluator is None:
                    raw = stored[row.pk]
                    assert raw is not None  # an active row has one (a constraint)
                    evaluator = _state_load(raw)
            except Exception as exc:  # noqa: BLE001 - as for the single step
                failures[row.pk] = Failed(row.cursor, exc)
                continue
            members.append(
                Member(row.pk, evaluator, row.cursor, row.seam, row.owner_id, row.owner.is_staff)
            )
        events = (
            subscriptions_log_read(after=min(m.cursor for m in members), upto=upto)
            if (members)
            else []
        )
        advance_members(members, events, upto=upto)
        by_id = {m.sub_id: m for m in members}
        notes: list[tuple[int, int, int | None, str]] = []
        messages: list[Any] = []
        going: set[int] = set()  # still active: their evaluators are kept after the commit
        more = False
        for row in rows:
            member = by_id.get(row.pk)
            failed = failures.get(row.pk) if member is None else member.failed
            found = [] if member is None else _outputs(member.outputs)
            if failed is not None:
                log.warning(
                    "subscription %s failed at seq %s", row.pk, failed.seq, exc_info=failed.error
                )
                found.append(
                    (failed.seq, {"error": "runtime_error", "message": _failure_text(failed.error)})
                )
                row.state, row.reason, row.evaluator = Subscription.State.SUSPENDED, "error", None
            elif member is not None and member.sub.suspended:
                row.state, row.reason, row.evaluator = (
                    Subscription.State.SUSPENDED,
                    "state_limit",
                    None,
                )
            elif member is not None and member.sub.finished:
                row.state, row.reason, row.evaluator = Subscription.State.DONE, "completed", None
            else:
                assert member is not None
                row.evaluator = evaluator_dump(member.sub)
                going.add(row.pk)
                more = more or upto < log_end
            first = row.last_n + 1
            notes.extend(
                (row.pk, n, seq, json.dumps(data)) for n, (seq, data) in enumerate(found, first)
            )
            row.last_n += len(found)
            row.cursor = upto
            ended = row.state == Subscription.State.DONE
            if found or ended:
                messages.extend(
                    _messages(
                        row.pk,
                        [notification_json(n, s, d) for n, (s, d) in enumerate(found, first)],
                        end=ended,
                    )
                )
        connection.ensure_connection()
        assert connection.connection is not None
        with connection.connection.cursor() as cursor:
            notifications_copy(cursor, notes)
            cursor.execute(
                UPDATE_ROWS,
                [
                    [row.pk for row in rows],
                    [row.last_n for row in rows],
                    [row.cursor for row in rows],
                    [row.evaluator for row in rows],
                    [row.state for row in rows],
                    [row.reason for row in rows],
                ],
            )
            written = dict(cursor.fetchall())
        # The set's members are keyed by subscription id (an int) in this pass.
        keep: dict[int, tuple[Version, Evaluator]] = {
            cast(int, member.sub_id): ((upto, str(written[member.sub_id])), member.sub)
            for member in members
            if member.sub_id in going
        }
        transaction.on_commit(lambda: _keep(keep))
        if messages:
            after_commit("pushing subscription notifications", lambda: group_send_all(messages))
    return more
