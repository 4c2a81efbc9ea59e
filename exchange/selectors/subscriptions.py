"""Reading live subscriptions (SPEC 8.3): a user's own rows, their outbox, and the log as a
subscription's owner sees it."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from exchange.errors import InvalidInput
from exchange.models import Event, Market, Subscription, SubscriptionNotification
from exchange.selectors.events import events_log_end
from exchange.selectors.history import history_events
from exchange.selectors.subjects import subject_matching
from matching.subjects import SubjectError, compile_pattern
from matching.subscriptions import Query, QueryError, run_offline
from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions.language.checked import parse_query_checked
from matching.subscriptions.language.closed_sets import nearest
from matching.subscriptions.language.subject_patterns import query_subject_patterns
from matching.subscriptions.patterns.automaton import PatternEngine
from matching.subscriptions.run.atomic import AtomicEngine
from matching.subscriptions.run.composite import CompositeEngine

# A backtest reads at most this many log events, spends at most this many seconds and
# returns at most this many notifications (SPEC 8.3: "bounded in events and time"); it
# reads the log this many events a query (a short read, so that the time bound is
# checked often between reads too).
BACKTEST_EVENTS = 100_000
BACKTEST_SECONDS = 3.0
BACKTEST_NOTIFICATIONS = 10_000
BACKTEST_STEP = 1000


def subscription_query_parsed(*, text: str) -> Query:
    """``text`` parsed as a subscription query; a bad one is ``InvalidInput`` with the
    parser's code, message and 0-based position (field ``query``). Registration, the
    backtest and the page's check as you type all read a query through here, which also
    refuses a test no event can pass (``type = 'trades'``: ``closed_sets``)."""
    try:
        return parse_query_checked(text)
    except QueryError as exc:
        raise InvalidInput(exc.code, exc.message, field="query", position=exc.position) from None


# Market subjects read at most for a "did you mean" (the nearest is looked for among them).
NEAREST_SUBJECTS = 10_000


def subscription_query_warnings(*, query: Query, text: str) -> list[dict[str, Any]]:
    """What is doubtful in a well-formed query, to show before it is saved (issue 39): each
    subject or subject pattern it requires (``query_subject_patterns``) that no market's
    subject matches now, as ``{"code": "no_market", "message", "position"}`` (``position``
    0-based: where the pattern is quoted in ``text``, if it is). A warning, not an error:
    the subscription may fire once such a market is created. One query per pattern, one
    more for a "did you mean" on a plain subject."""
    warnings: list[dict[str, Any]] = []
    for pattern in query_subject_patterns(query):
        try:
            compiled = compile_pattern(pattern)
        except SubjectError:
            message = (
                f"'{pattern}' is not a market subject (lowercase letters and digits in "
                "tokens separated by '.'), so no market will ever match it."
            )
        else:
            where = subject_matching(field="subject", pattern=pattern, parameter="query")
            if Market.objects.filter(where).exists():
                continue
            what = "market's subject matches" if not compiled.is_literal else "market has subject"
            message = (
                f"No {what} '{pattern}' yet: this subscription notifies nothing until one does."
            )
            if compiled.is_literal:
                subjects = Market.objects.order_by("subject").values_list("subject", flat=True)
                guess = nearest(pattern, subjects[:NEAREST_SUBJECTS], cutoff=0.8)
                if guess is not None:
                    message += f" Did you mean '{guess}'?"
        quoted = text.find("'" + pattern.replace("'", "''") + "'")
        warning: dict[str, Any] = {"code": "no_market", "message": message}
        if quoted >= 0:
            warning["position"] = quoted
        warnings.append(warning)
    return warnings


def subscription_list(*, owner: User) -> QuerySet[Subscription]:
    """``owner``'s subscriptions, newest first."""
    return Subscription.objects.filter(owner=owner).order_by("-id")


def subscription_get(*, owner: User, subscription_id: int) -> Subscription | None:
    """``owner``'s subscription ``subscription_id``; None for anyone else's (no one learns
    that another user's exists)."""
    return Subscription.objects.filter(owner=owner, id=subscription_id).first()


def subscription_active_count(*, owner: User) -> int:
    """``owner``'s active and paused subscriptions: a paused one counts toward the limit,
    so resuming it never takes a user past it."""
    live = (Subscription.State.ACTIVE, Subscription.State.PAUSED)
    return Subscription.objects.filter(owner=owner, state__in=live).count()


def notification_json(n: int, seq: int | None, data: Any) -> dict[str, Any]:
    """A notification as the REST outbox and the ``sub:<id>`` stream carry it."""
    return {"n": n, "seq": seq, "data": data}


def subscription_notifications(
    *, subscription_id: int, after: int, upto: int | None = None, limit: int
) -> list[dict[str, Any]]:
    """At most ``limit`` notifications of the subscription with ``after < n`` (``<= upto``),
    in ``n`` order, each as ``notification_json`` writes it."""
    rows = SubscriptionNotification.objects.filter(subscription_id=subscription_id, n__gt=after)
    if upto is not None:
        rows = rows.filter(n__lte=upto)
    return [
        notification_json(*row)
        for row in rows.order_by("n").values_list("n", "seq", "data")[:limit]
    ]


def subscription_position(*, subscription_id: int) -> tuple[int, str] | None:
    """The subscription's last ``n`` and its state, read together; None if it is gone."""
    return Subscription.objects.filter(id=subscription_id).values_list("last_n", "state").first()


def subscription_owner_id(*, subscription_id: int) -> int | None:
    return (
        Subscription.objects.filter(id=subscription_id).values_list("owner_id", flat=True).first()
    )


def subscription_log_read(*, owner: User, after: int, upto: int) -> list[dict[str, Any]]:
    """The events ``owner`` may see (SPEC 5.6) with ``after < seq <= upto``, in ``seq``
    order, as ``event_row_json`` writes them: the one place a subscription reads the log,
    history and live alike (so that a faster or replicated historic read replaces it alone).
    The caller bounds ``upto - after``."""
    return list(history_events(user=owner, after=after, upto=upto))


def log_seq_before(*, time: Any) -> int | None:
    """The ``seq`` just before the log's first event at or after ``time`` (None if no
    event is that late): where a history starting at ``time`` begins. ``time`` never
    decreases along ``seq`` (the writer's rule), so the time index answers it."""
    first = (
        Event.objects.filter(time__gte=time).order_by("time", "seq").values_list("seq", flat=True)
    ).first()
    return None if first is None else first - 1


def evaluator_start(evaluator: Evaluator) -> dt.datetime:
    """The earliest time an event can take part in (earlier events only pass through):
    form 1's start, the earliest of form 2's aliases, ``NOW`` for a pattern, and the log's
    beginning for a watch (form 4), whose open offers are built from every offer event, as
    for any other engine (a form added later): slower, never wrong."""
    engine = evaluator.engine
    if isinstance(engine, PatternEngine):
        return evaluator.now
    if isinstance(engine, CompositeEngine):
        return min(start for start, _ in engine.ranges.values())
    if isinstance(engine, AtomicEngine):
        return engine.start
    return dt.datetime.min.replace(tzinfo=dt.UTC)


@dataclass(frozen=True)
class Backtest:
    notifications: list[dict[str, Any]]
    end: bool
    truncated: bool
    events_read: int


def subscription_backtest(
    *,
    user: User,
    query: Query,
    since: dt.datetime,
    until: dt.datetime,
    max_events: int = BACKTEST_EVENTS,
    max_notifications: int = BACKTEST_NOTIFICATIONS,
    budget: float = BACKTEST_SECONDS,
    clock: Callable[[], float] | None = None,
) -> Backtest:
    """What ``query`` would have sent ``user`` had it been registered at ``since``, over
    the log before ``until`` and no further: the offline contract (``run_offline``, the one
    evaluator) with ``now = since`` over the events ``user`` may see from the query's
    earliest start to ``until``. The events of ``[since, until)`` are its live part, so a
    form 3 pattern sees them too; a query that starts before ``NOW`` gets the earlier ones
    as history. Bounded: past ``max_events`` log events read, ``max_notifications``
    notifications or ``budget`` seconds of ``clock`` (``time.monotonic``) it stops, with
    ``truncated``. The time is asked between reads, before each event and inside a
    composite join every ``limits.CHECK_EVERY`` candidates (``run_offline``'s
    ``interrupt``), so the bound holds however the time is spent."""
    now = clock or time.monotonic
    deadline = now() + budget
    progress = {"read": 0, "truncated": False}

    def out_of_time() -> bool:
        if now() > deadline:
            progress["truncated"] = True
        return bool(progress["truncated"])

    start = min(since, evaluator_start(Evaluator(query, now=since)))
    first = log_seq_before(time=start)
    last = log_seq_before(time=until)
    upto = events_log_end() if last is None else last

    def events() -> Iterator[dict[str, Any]]:
        position = upto if first is None else first
        while position < upto:
            if progress["read"] >= max_events:
                progress["truncated"] = True
            if out_of_time():
                return
            step = min(upto, position + min(BACKTEST_STEP, max_events - progress["read"]))
            read = subscription_log_read(owner=user, after=position, upto=step)
            progress["read"] += step - position
            position = step
            yield from read

    out: list[dict[str, Any]] = []
    end = False
    for line in run_offline(query, events(), now=since, interrupt=out_of_time):
        if "end" in line:
            end = not progress["truncated"]
            break
        if len(out) == max_notifications:
            progress["truncated"] = True
            break
        out.append(line)
    return Backtest(out, end, bool(progress["truncated"]), int(progress["read"]))
