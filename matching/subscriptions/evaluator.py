"""The one evaluator of subscriptions (SPEC 8.3, forms 1 and 2).

A ``Subscription`` is registered at ``now`` and then fed events in ``seq`` order, each
marked as history (in the log at registration) or live. It answers each event with the
notifications it causes, numbered ``n`` = 1, 2, 3, ... The live path, backtests and
``subscription_run`` drive this same object; ``run_offline`` is SPEC 8.3's offline
contract on top of it.

Time: an event takes part when ``start <= time < end`` (start defaults to ``now``). An
end at or before ``now`` completes the subscription when its history is over; a later
end completes it at the first live event with ``time >= end`` (not delivered). A form 2
subscription completes when every alias's range has ended.

State: the events a subscription holds (open windows, events kept for joins) are
counted; past ``state_limit`` it sends ``{"error": "state_limit"}`` and stops (SPEC 8.3:
never silently trimmed).
"""

from __future__ import annotations

import datetime as dt
import operator
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from fractions import Fraction
from typing import Any

from matching import Interval, Type, Wildcard

from .events import Event, event_from_dict
from .model import (
    Aggregate,
    AtomicQuery,
    Attr,
    CompositeQuery,
    Condition,
    Having,
    Join,
    Query,
    SubjectTest,
    Test,
    TimeRange,
)
from .parser import output_key

STATE_LIMIT = 100_000
AVG_PLACES = 8

COMPARE: Mapping[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

# Sums of decimals are exact whatever their digits.
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


@dataclass(frozen=True)
class Notification:
    n: int
    seq: int
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "seq": self.seq, "data": self.data}


@dataclass(frozen=True)
class End:
    """The subscription completed (offline ``{"end": true}``, live a frame of type ``end``)."""

    def to_json(self) -> dict[str, Any]:
        return {"end": True}


Output = Notification | End


# -- tests on one event ---------------------------------------------------------------------


def test_holds(test: Test, values: Mapping[str, Any]) -> bool:
    """SPEC 8.3's content rule: an absent attribute fails every predicate, ``= *`` is presence."""
    if isinstance(test, SubjectTest):
        return test.compiled.matches(values["subject"]) != test.negated
    v = values.get(test.attribute)
    if v is None:
        return False
    pred = test.predicate
    if type(pred) is Wildcard:
        return True
    assert isinstance(pred, Interval)
    if pred.lo is not None and (v < pred.lo or (v == pred.lo and not pred.lo_closed)):
        return False
    return pred.hi is None or v < pred.hi or (v == pred.hi and pred.hi_closed)


def condition_holds(condition: Condition, values: Mapping[str, Any]) -> bool:
    return any(all(test_holds(t, values) for t in tests) for tests in condition.disjuncts)


def _in_range(time: dt.datetime, start: dt.datetime, end: dt.datetime | None) -> bool:
    return start <= time and (end is None or time < end)


def _resolve(time: TimeRange, now: dt.datetime) -> tuple[dt.datetime, dt.datetime | None]:
    start = now if time.start is None else time.start.resolve(now)
    end = None if time.end is None else time.end.resolve(now)
    return start, end


# -- aggregates -----------------------------------------------------------------------------


def aggregate_exact(a: Aggregate, window: list[Event]) -> Any:
    """The exact value of an aggregate over a window (what HAVING compares)."""
    values: list[Any] = [e.values[a.attribute] for e in window]
    if a.func == "COUNT":
        return len(values)
    if a.func == "MIN":
        return min(values)
    if a.func == "MAX":
        return max(values)
    total = sum((Fraction(v) for v in values), Fraction(0))
    return total if a.func == "SUM" else total / len(values)


def aggregate_shown(a: Aggregate, window: list[Event]) -> Any:
    """An aggregate as a notification shows it: AVG a decimal string rounded half-even to 8
    places, the others in the attribute's type (decimals as strings, as events carry them)."""
    if a.func == "COUNT":
        return len(window)
    if a.func in ("MIN", "MAX"):
        pick = min if a.func == "MIN" else max
        return pick(window, key=lambda e: e.values[a.attribute]).raw[a.attribute]
    if a.func == "AVG":
        return format_places(aggregate_exact(a, window), AVG_PLACES)
    raws = [e.raw[a.attribute] for e in window]
    if a.type is Type.INT or all(type(r) is int for r in raws):
        return sum(raws)
    total = Decimal(0)
    for e in window:
        total = _EXACT.add(total, e.values[a.attribute])  # type: ignore[arg-type]
    return format(total, "f")


def format_places(value: Fraction, places: int) -> str:
    """``value`` rounded half-even to ``places`` decimal places, as a decimal string."""
    scaled = round(value * 10**places)  # round() on a Fraction is half-even
    digits = Decimal(abs(scaled)).as_tuple().digits
    return format(Decimal((1 if scaled < 0 else 0, digits, -places)), "f")


# -- form 1 ---------------------------------------------------------------------------------


class _Atomic:
    def __init__(self, q: AtomicQuery, now: dt.datetime) -> None:
        self.q = q
        self.start, self.end = _resolve(q.time, now)
        self.kept = 0
        aggregates = q.aggregates
        self.aggregates = aggregates
        required = {a.attribute for a in aggregates}
        if q.having is not None:
            required.add(q.having.aggregate.attribute)
        self.required = tuple(sorted(required))
        self.windows: dict[tuple[Any, ...], Any] = {}

    @property
    def kept_events(self) -> int:
        return self.kept

    def matches(self, e: Event) -> bool:
        values = e.values
        return (
            _in_range(e.time, self.start, self.end)
            and all(condition_holds(c, values) for c in self.q.conditions)
            and all(a in values for a in self.required)
        )

    def event(self, e: Event) -> list[tuple[int, dict[str, Any]]]:
        if not self.matches(e):
            return []
        q = self.q
        if self.aggregates:
            return self._tumbling(e)
        if q.having is not None:
            return self._sliding(e, q.having)
        return [(e.seq, self.project(e))]

    def project(self, e: Event) -> dict[str, Any]:
        if self.q.select is None:
            return dict(e.raw)
        raw = e.raw
        return {
            output_key(i): raw[i.attribute]
            for i in self.q.select
            if isinstance(i, Attr) and i.attribute in raw
        }

    def _group(self, e: Event) -> tuple[Any, ...]:
        # An absent grouping attribute is a group value of its own, as NULL is in SQL.
        return tuple(e.values.get(g) for g in self.q.group_by)

    def _tumbling(self, e: Event) -> list[tuple[int, dict[str, Any]]]:
        key = self._group(e)
        window = self.windows.setdefault(key, [])
        window.append(e)
        self.kept += 1
        if len(window) < self.aggregates[0].n:
            return []
        del self.windows[key]
        self.kept -= len(window)
        data: dict[str, Any] = {}
        assert self.q.select is not None
        for item in self.q.select:
            if isinstance(item, Aggregate):
                data[output_key(item)] = aggregate_shown(item, window)
            elif item.attribute in e.raw:
                data[output_key(item)] = e.raw[item.attribute]
        return [(e.seq, data)]

    def _sliding(self, e: Event, having: Having) -> list[tuple[int, dict[str, Any]]]:
        n = having.aggregate.n
        key = self._group(e)
        window = self.windows.get(key)
        if window is None:
            window = self.windows[key] = deque(maxlen=n)
        if len(window) < n:
            self.kept += 1
        window.append([e, False])
        if len(window) < n:
            return []
        events = [entry[0] for entry in window]
        if not COMPARE[having.op](aggregate_exact(having.aggregate, events), having.value):
            return []
        out = []
        for entry in window:
            if not entry[1]:
                entry[1] = True
                out.append((entry[0].seq, self.project(entry[0])))
        if having.reset:
            del self.windows[key]
            self.kept -= len(window)
        return out


# -- form 2 ---------------------------------------------------------------------------------


class _Composite:
    def __init__(self, q: CompositeQuery, now: dt.datetime) -> None:
        self.q = q
        self.aliases = q.aliases
        self.ranges = {a: _resolve(q.range_of(a), now) for a in q.aliases}
        self.conditions = {a: [c for c in q.conditions if c.alias == a] for a in q.aliases}
        self.kept: dict[str, list[Event]] = {a: [] for a in q.aliases}
        self.holders: Counter[int] = Counter()  # seq -> how many aliases keep the event
        # joins checked as soon as both of their aliases are bound (in FROM order)
        order = {a: i for i, a in enumerate(q.aliases)}
        self.joins_at: dict[str, list[Join]] = {a: [] for a in q.aliases}
        for j in q.joins:
            later = max(j.left_alias, j.right_alias, key=order.__getitem__)
            self.joins_at[later].append(j)
        self.useful = set(q.aliases)
        self.closing: dt.datetime | None = min(
            (end for _, end in self.ranges.values() if end is not None), default=None
        )

    def qualifies(self, alias: str, e: Event) -> bool:
        start, end = self.ranges[alias]
        return _in_range(e.time, start, end) and all(
            condition_holds(c, e.values) for c in self.conditions[alias]
        )

    def event(self, e: Event) -> list[tuple[int, dict[str, Any]]]:
        slots = [a for a in self.aliases if self.qualifies(a, e)]
        tuples: list[tuple[Event, ...]] = []
        for alias in slots:
            tuples.extend(self._complete(alias, e))
        tuples.sort(key=lambda t: tuple(ev.seq for ev in t))
        out = [(e.seq, self.project(t)) for t in tuples]
        if self.closing is not None and e.time >= self.closing:
            self._close(e.time)
        for alias in slots:
            if alias in self.useful:
                self.kept[alias].append(e)
                self.holders[e.seq] += 1
        return out

    @property
    def kept_events(self) -> int:
        return len(self.holders)


    def _complete(self, alias: str, e: Event) -> Iterator[tuple[Event, ...]]:
        """Every tuple with ``e`` bound to ``alias`` and earlier kept events elsewhere."""
        bound: dict[str, Event] = {}
        aliases = self.aliases

        def extend(i: int) -> Iterator[tuple[Event, ...]]:
            if i == len(aliases):
                yield tuple(bound[a] for a in aliases)
                return
            a = aliases[i]
            candidates = [e] if a == alias else self.kept[a]
            for c in candidates:
                if a != alias and any(b is c for b in bound.values()):
                    continue  # the events of a tuple are distinct
                bound[a] = c
                if all(self._join_holds(j, bound) for j in self.joins_at[a]):
                    yield from extend(i + 1)
                del bound[a]

        return extend(0)

    @staticmethod
    def _join_holds(j: Join, bound: Mapping[str, Event]) -> bool:
        left = bound[j.left_alias].values.get(j.left)
        right = bound[j.right_alias].values.get(j.right)
        if left is None or right is None:
            return False
        return COMPARE[j.op](left, right)

    def _close(self, time: dt.datetime) -> None:
        """Some alias's range has ended: forget what can no longer join anything."""
        open_ = {a for a, (_, end) in self.ranges.items() if end is None or time < end}
        # An alias's events matter only while another alias can still take events.
        self.useful = {a for a in self.aliases if open_ - {a}}
        for alias in self.aliases:
            if alias not in self.useful and self.kept[alias]:
                for ev in self.kept[alias]:
                    self.holders[ev.seq] -= 1
                    if not self.holders[ev.seq]:
                        del self.holders[ev.seq]
                self.kept[alias] = []
        later = [end for _, end in self.ranges.values() if end is not None and end > time]
        self.closing = min(later, default=None)

    def project(self, t: tuple[Event, ...]) -> dict[str, Any]:
        by_alias = dict(zip(self.aliases, t, strict=True))
        if self.q.select is None:
            return {a: dict(ev.raw) for a, ev in by_alias.items()}
        data: dict[str, dict[str, Any]] = {}
        for item in self.q.select:
            assert item.alias is not None
            raw = by_alias[item.alias].raw
            part = data.setdefault(item.alias, {})
            if item.attribute in raw:
                part[item.attribute] = raw[item.attribute]
        return data


# -- the subscription -----------------------------------------------------------------------


class Subscription:
    """One registered subscription. Feed it events in ``seq`` order with ``push``; call
    ``history_done`` once the history is over if no live event follows.

    ``finished`` is true once it has completed (its last output is ``End``) or been
    suspended (``suspended``; its last output is the ``state_limit`` notification).
    """

    def __init__(self, query: Query, *, now: dt.datetime, state_limit: int = STATE_LIMIT) -> None:
        self.query = query
        self.now = now
        self.engine: _Atomic | _Composite
        if isinstance(query, CompositeQuery):
            self.engine = _Composite(query, now)
            ends = [_resolve(query.range_of(a), now)[1] for a in query.aliases]
            self.end = None if any(x is None for x in ends) else max(ends)  # type: ignore[type-var]
        else:
            self.engine = _Atomic(query, now)
            self.end = self.engine.end
        self.state_limit = state_limit
        self.n = 0
        self.live = False
        self.finished = False
        self.suspended = False

    def push(self, event: Event | Mapping[str, Any], *, live: bool) -> list[Output]:
        """The outputs caused by one event (history while ``live`` is false)."""
        if self.finished:
            return []
        e = event if isinstance(event, Event) else event_from_dict(event)
        out: list[Output] = []
        if live and not self.live:
            out.extend(self.history_done())
            if self.finished:
                return out
        if live and self.end is not None and e.time >= self.end:
            self.finished = True
            return [*out, End()]
        out.extend(self._number(self.engine.event(e)))
        if self.engine.kept_events > self.state_limit:
            # Measured once the event is fully processed: what it completed is delivered.
            self.finished = self.suspended = True
            out.extend(self._number([(e.seq, {"error": "state_limit"})]))
        return out

    def history_done(self) -> list[Output]:
        """The history is over: a subscription whose end is at or before ``now`` completes."""
        if self.live or self.finished:
            return []
        self.live = True
        if self.end is not None and self.end <= self.now:
            self.finished = True
            return [End()]
        return []

    def _number(self, found: Iterable[tuple[int, dict[str, Any]]]) -> list[Output]:
        out: list[Output] = []
        for seq, data in found:
            self.n += 1
            out.append(Notification(self.n, seq, data))
        return out


def run_offline(
    query: Query,
    events: Iterable[Mapping[str, Any] | Event],
    *,
    now: dt.datetime,
    state_limit: int = STATE_LIMIT,
) -> Iterator[dict[str, Any]]:
    """SPEC 8.3's offline contract: events before ``now`` are history, the rest live, in
    the order given; yields each notification's JSON form and ``{"end": true}`` if the
    subscription completes. ``EventError`` for a malformed event.
    """
    sub = Subscription(query, now=now, state_limit=state_limit)
    for raw in events:
        e = raw if isinstance(raw, Event) else event_from_dict(raw)
        for output in sub.push(e, live=e.time >= now):
            yield output.to_json()
        if sub.finished:
            return
    for output in sub.history_done():
        yield output.to_json()
