"""Form 1's engine: the events that match, tumbling aggregate windows, HAVING windows.

An engine answers one event at a time with ``(seq, data)`` pairs; numbering, time
completion and the state limit are the ``Subscription``'s (``evaluator``).
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from typing import Any

from matching.subscriptions.events import Event
from matching.subscriptions.language.clauses import output_key
from matching.subscriptions.language.model import Aggregate, AtomicQuery, Attr, Having

from .aggregates import aggregate_shown, having_holds
from .limits import event_size
from .predicates import condition_holds, in_range, resolve


class AtomicEngine:
    bytes = 0  # for an engine pickled before it counted its windows' size

    def __init__(self, q: AtomicQuery, now: dt.datetime) -> None:
        self.q = q
        self.start, self.end = resolve(q.time, now)
        self.kept = 0
        self.bytes = 0  # event_size of the events in open windows
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

    @property
    def kept_bytes(self) -> int:
        return self.bytes

    def matches(self, e: Event) -> bool:
        values = e.values
        return (
            in_range(e.time, self.start, self.end)
            and all(condition_holds(c, values) for c in self.q.conditions)
            and all(a in values for a in self.required)
        )

    def event(self, e: Event, matched: bool = False) -> list[tuple[int, dict[str, Any]]]:
        """The event's outputs. ``matched``: the caller found that ``e`` passes every
        conjunct (the matching index's walk and residual check, exact:
        ``matching/index/form1.py``), so only the time range and the attributes the
        aggregates need are checked here."""
        if matched:
            if not in_range(e.time, self.start, self.end):
                return []
            if self.required:  # (most have none: no generator made for them)
                values = e.values
                if not all(a in values for a in self.required):
                    return []
        elif not self.matches(e):
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
        self.bytes += event_size(e.raw)
        if len(window) < self.aggregates[0].n:
            return []
        del self.windows[key]
        self.kept -= len(window)
        self.bytes -= sum(event_size(w.raw) for w in window)
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
        else:
            self.bytes -= event_size(window[0][0].raw)  # it leaves the window
        self.bytes += event_size(e.raw)
        window.append([e, False])
        if len(window) < n:
            return []
        events = [entry[0] for entry in window]
        if not having_holds(having, events):
            return []
        out = []
        for entry in window:
            if not entry[1]:
                entry[1] = True
                out.append((entry[0].seq, self.project(entry[0])))
        if having.reset:
            del self.windows[key]
            self.kept -= len(window)
            self.bytes -= sum(event_size(entry[0].raw) for entry in window)
        return out
