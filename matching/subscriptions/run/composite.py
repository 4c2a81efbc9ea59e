"""Form 2's engine: tuples of distinct events, one per alias, that satisfy every conjunct.

Each event is tried in every alias slot it qualifies for, against the events kept for
the other aliases (all earlier), so a tuple is found exactly when its last event is
processed. Events are kept for an alias only while some other alias can still take
events; the count of distinct kept events and their size are the state SPEC 8.3 limits.

The join is metered (``limits.Meter``): the candidates of each alias are counted before
they are walked and each tuple found as it is found, so a join that would examine or
output more than its limits allow stops before doing so (``LimitPassed``).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from matching.subscriptions.events import Event
from matching.subscriptions.language.model import CompositeQuery, Join

from .limits import LIMITS, Meter, event_size
from .predicates import COMPARE, condition_holds, in_range, resolve


class CompositeEngine:
    bytes = 0  # for an engine pickled before it counted its kept events' size

    def __init__(self, q: CompositeQuery, now: dt.datetime) -> None:
        self.q = q
        self.aliases = q.aliases
        self.ranges = {a: resolve(q.range_of(a), now) for a in q.aliases}
        self.conditions = {a: [c for c in q.conditions if c.alias == a] for a in q.aliases}
        self.kept: dict[str, list[Event]] = {a: [] for a in q.aliases}
        self.holders: Counter[int] = Counter()  # seq -> how many aliases keep the event
        self.bytes = 0  # event_size of the distinct kept events
        # joins checked as soon as both of their aliases are bound (in FROM order)
        order = {a: i for i, a in enumerate(q.aliases)}
        self.joins_at: dict[str, list[Join]] = {a: [] for a in q.aliases}
        for j in q.joins:
            later = max(j.left_alias, j.right_alias, key=order.__getitem__)
            self.joins_at[later].append(j)
        # For an alias with an equality join on an earlier alias, its kept events are also
        # hashed by the joined attribute, so that a tuple looks up its partners instead of
        # scanning them all (the join is still checked, like every other).
        self.probes: dict[str, tuple[str, str, str]] = {}
        for a, joins in self.joins_at.items():
            for j in joins:
                if j.op == "=":
                    mine, other = (j.left, (j.right_alias, j.right))
                    if j.right_alias == a:
                        mine, other = j.right, (j.left_alias, j.left)
                    self.probes[a] = (mine, *other)
                    break
        self.index: dict[str, dict[Any, list[Event]]] = {a: {} for a in self.probes}
        self.useful = set(q.aliases)
        self.closing: dt.datetime | None = min(
            (end for _, end in self.ranges.values() if end is not None), default=None
        )

    def qualifies(self, alias: str, e: Event) -> bool:
        start, end = self.ranges[alias]
        return in_range(e.time, start, end) and all(
            condition_holds(c, e.values) for c in self.conditions[alias]
        )

    def event(self, e: Event, meter: Meter | None = None) -> list[tuple[int, dict[str, Any]]]:
        """The tuples ``e`` completes, as ``(seq, data)`` in order; ``LimitPassed`` (the
        engine half-way) as soon as they cost more than ``meter`` allows."""
        if meter is None:
            meter = Meter(LIMITS)
        slots = [a for a in self.aliases if self.qualifies(a, e)]
        tuples: list[tuple[Event, ...]] = []
        emit = meter.emit
        for alias in slots:
            for t in self._complete(alias, e, meter):
                emit()
                tuples.append(t)
        tuples.sort(key=lambda t: tuple(ev.seq for ev in t))
        out = [(e.seq, self.project(t)) for t in tuples]
        if self.closing is not None and e.time >= self.closing:
            self._close(e.time)
        for alias in slots:
            if alias in self.useful:
                self.kept[alias].append(e)
                self.holders[e.seq] += 1
                if self.holders[e.seq] == 1:
                    self.bytes += event_size(e.raw)
                probe = self.probes.get(alias)
                if probe is not None and probe[0] in e.values:
                    self.index[alias].setdefault(e.values[probe[0]], []).append(e)
        return out

    @property
    def kept_events(self) -> int:
        return len(self.holders)

    @property
    def kept_bytes(self) -> int:
        return self.bytes

    def _complete(self, alias: str, e: Event, meter: Meter) -> Iterator[tuple[Event, ...]]:
        """Every tuple with ``e`` bound to ``alias`` and earlier kept events elsewhere;
        each list of candidates is paid for (``meter.spend``) before it is walked."""
        bound: dict[str, Event] = {}
        aliases = self.aliases
        spend = meter.spend

        def extend(i: int) -> Iterator[tuple[Event, ...]]:
            if i == len(aliases):
                yield tuple(bound[a] for a in aliases)
                return
            a = aliases[i]
            if a == alias:
                candidates = [e]
            elif a in self.probes:
                _, other, other_attr = self.probes[a]
                value = bound[other].values.get(other_attr)
                candidates = [] if value is None else self.index[a].get(value, [])
            else:
                candidates = self.kept[a]
            spend(len(candidates))
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
                        self.bytes -= event_size(ev.raw)
                self.kept[alias] = []
                if alias in self.index:
                    self.index[alias] = {}
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
