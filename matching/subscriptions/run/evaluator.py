"""The one evaluator of subscriptions (SPEC 8.3, forms 1 to 4).

A ``Subscription`` is registered at ``now`` and then fed events in ``seq`` order, each
marked as history (in the log at registration) or live. It answers each event with the
notifications it causes, numbered ``n`` = 1, 2, 3, ... The live path, backtests and
``subscription_run`` drive this same object; ``run_offline`` is SPEC 8.3's offline
contract on top of it.

Time: an event takes part when ``start <= time < end`` (start defaults to ``now``). An
end at or before ``now`` completes the subscription when its history is over; a later
end completes it at the first live event with ``time >= end`` (not delivered). A form 2
subscription completes when every alias's range has ended. A form 3 pattern follows live
events only (history is not offered to it) and never completes. A form 4 watch takes
history to build the open offers, notifies its answer once the history is over (at the
last history event's ``seq``, ``None`` without history) and never completes.

Limits (``limits.py``, SPEC 8.3's fine points): the events a subscription holds (open
windows, events kept for joins, a pattern's live instances) and their size, and for one
event the work of a composite join and the outputs, are bounded; past any of them it sends
``{"error": "state_limit"}`` and stops (never silently trimmed), in place of that event's
outputs when the event's own work or outputs passed the limit, after them when the state
it keeps did. Live, the subscription becomes ``suspended``.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from matching.subscriptions.events import Event, event_from_dict
from matching.subscriptions.language.model import CompositeQuery, Query, WatchQuery
from matching.subscriptions.patterns.automaton import PatternEngine
from matching.subscriptions.patterns.model import PatternQuery
from matching.subscriptions.watches.watch import WatchEngine

from .atomic import AtomicEngine
from .composite import CompositeEngine
from .limits import LIMITS, STATE_LIMIT, Interrupted, LimitPassed, Limits, Meter
from .predicates import resolve

__all__ = ["STATE_LIMIT", "End", "Notification", "Output", "Subscription", "run_offline"]

# A pattern's meter only asks the interrupt: its work is bounded by its instances (limits.py).
_UNMETERED = Limits(work=sys.maxsize)


@dataclass(slots=True)
class Notification:
    """One output of a subscription. Not frozen, only because a frozen dataclass costs
    about three times as much to build and ``multi.py`` builds about a hundred per event
    at 100,000 patterns; nothing changes one once it is made. ``data`` is read, never
    changed, by every consumer (the REST outbox, the stream, the tests): the members of a
    shared automaton or group that one completed instance gives an output share one
    ``data`` dict (``multi.py``)."""

    n: int
    seq: int | None  # None only for a watch's first notification when there was no history
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "seq": self.seq, "data": self.data}


@dataclass(frozen=True)
class End:
    """The subscription completed (offline ``{"end": true}``, live a frame of type ``end``)."""

    def to_json(self) -> dict[str, Any]:
        return {"end": True}


Output = Notification | End


class Subscription:
    """One registered subscription. Feed it events in ``seq`` order with ``push``; call
    ``history_done`` once the history is over if no live event follows.

    ``finished`` is true once it has completed (its last output is ``End``) or been
    suspended (``suspended``; its last output is the ``state_limit`` notification).
    ``limits`` are its bounds (``limits.Limits``; ``state_limit`` is ``limits.state``).

    Slots: ``multi.py`` reads and numbers on about a hundred of these per event, out of
    100,000 spread over the heap, and a slotted object is one read where one with a
    ``__dict__`` is two.
    """

    __slots__ = (
        "query", "now", "engine", "end", "state_limit", "limits", "n", "live", "finished",
        "suspended",
    )  # fmt: skip

    def __init__(
        self,
        query: Query,
        *,
        now: dt.datetime,
        state_limit: int | None = None,
        limits: Limits = LIMITS,
    ) -> None:
        self.query = query
        self.now = now
        self.engine: AtomicEngine | CompositeEngine | PatternEngine | WatchEngine
        if isinstance(query, WatchQuery):
            self.engine = WatchEngine(query)
            self.end = None
        elif isinstance(query, PatternQuery):
            self.engine = PatternEngine(query)
            self.end = None
        elif isinstance(query, CompositeQuery):
            self.engine = CompositeEngine(query, now)
            ends = [resolve(query.range_of(a), now)[1] for a in query.aliases]
            self.end = None if any(x is None for x in ends) else max(ends)  # type: ignore[type-var]  # max() only when no end is None
        else:
            self.engine = AtomicEngine(query, now)
            self.end = self.engine.end
        if state_limit is not None:
            limits = replace(limits, state=state_limit)
        self.limits = limits
        self.state_limit = limits.state
        self.n = 0
        self.live = False
        self.finished = False
        self.suspended = False

    def push(
        self,
        event: Event | Mapping[str, Any],
        *,
        live: bool,
        interrupt: Callable[[], bool] | None = None,
        matched: bool = False,
    ) -> list[Output]:
        """The outputs caused by one event (history while ``live`` is false). Past a limit
        in the middle of the event, the ``state_limit`` notification takes the place of
        its outputs. ``interrupt`` is asked now and then inside a composite's join or a
        pattern's event (``limits.Meter``):
        if it answers true, ``Interrupted`` is raised and the subscription is left
        finished, its engine half-way (a backtest out of time). ``matched``: a form 1
        subscription's conjuncts are known to pass (``AtomicEngine.event``)."""
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
        if not live and isinstance(self.engine, PatternEngine):
            return out  # patterns follow live events only (SPEC 8.3's fine points)
        engine = self.engine
        found: Sequence[tuple[int | None, dict[str, Any]]]
        try:
            if isinstance(engine, CompositeEngine):
                found = engine.event(e, Meter(self.limits, interrupt))
            elif isinstance(engine, PatternEngine) and interrupt is not None:
                found = engine.event(e, Meter(_UNMETERED, interrupt))
            elif matched and isinstance(engine, AtomicEngine):
                found = engine.event(e, matched=True)
            else:
                found = engine.event(e)
        except LimitPassed:
            out.append(self._suspend(e.seq))
            return out
        except Interrupted:
            self.finished = True
            raise
        out.extend(self.deliver(e.seq, found, engine.kept_events, engine.kept_bytes))
        return out

    def deliver(
        self,
        seq: int,
        found: Sequence[tuple[int | None, dict[str, Any]]],
        kept: int | None,
        kept_bytes: int = 0,
    ) -> list[Output]:
        """The end of ``push`` for a live event ``seq`` whose engine answered ``found``
        (``(seq, data)`` pairs, in order) and holds ``kept`` events of ``kept_bytes`` after
        it (``None``: its caller knows that is within ``state_limit``). More outputs than
        ``limits.outputs``: none of them, the suspension instead."""
        if len(found) > self.limits.outputs:
            return [self._suspend(seq)]
        out = self._number(found)
        ending = self._over_limit(seq, kept, kept_bytes)
        if ending is not None:
            out.append(ending)
        return out

    def deliver_to(
        self,
        key: Hashable,
        seq: int,
        datas: Iterable[dict[str, Any]],
        kept: int | None,
        out: list[tuple[Hashable, Any]],
    ) -> None:
        """``deliver`` for a pattern whose matches a shared automaton or group found for
        many at once (``multi.py``): the live event ``seq`` completed instances whose
        ``data``s are ``datas``, in order; each output is appended to ``out`` as ``(key,
        output)``, numbered and suspended exactly as ``push`` does it. ``datas`` may be
        lazy: if reading it raises, the error goes on to the caller with nothing appended
        and nothing changed (alone, the pattern would have failed on the event)."""
        deliver_all(seq, ((key, self, datas),), out, _raise)
        if kept is not None and not self.finished:
            ending = self._over_limit(seq, kept)
            if ending is not None:
                out.append((key, ending))

    def _over_limit(self, seq: int, kept: int | None, kept_bytes: int = 0) -> Notification | None:
        """Past ``limits.state`` with ``kept`` events held, or ``limits.state_bytes`` with
        ``kept_bytes``: suspended, with the notification that says so. Measured once the
        event is fully processed (it adds at most one event per alias): what it completed
        is delivered first."""
        if kept is None:
            return None
        if kept <= self.state_limit and kept_bytes <= self.limits.state_bytes:
            return None
        return self._suspend(seq)

    def _suspend(self, seq: int) -> Notification:
        """Suspended at the event ``seq`` for passing a limit: the last notification."""
        self.finished = self.suspended = True
        self.n += 1
        return Notification(self.n, seq, {"error": "state_limit"})

    def history_done(self) -> list[Output]:
        """The history is over: a subscription whose end is at or before ``now`` completes."""
        if self.live or self.finished:
            return []
        self.live = True
        if isinstance(self.engine, WatchEngine):
            return self._number(self.engine.register())
        if self.end is not None and self.end <= self.now:
            self.finished = True
            return [End()]
        return []

    def _number(self, found: Iterable[tuple[int | None, dict[str, Any]]]) -> list[Output]:
        out: list[Output] = []
        for seq, data in found:
            self.n += 1
            out.append(Notification(self.n, seq, data))
        return out


def deliver_all(
    seq: int,
    given: Iterable[tuple[Hashable, Subscription, Iterable[dict[str, Any]]]],
    out: list[tuple[Hashable, Any]],
    failed: Callable[[Hashable, Exception], None],
    ended: Callable[[Hashable], None] | None = None,
) -> None:
    """``Subscription.deliver_to`` for many patterns in one call (``multi.py``: the members
    of a shared automaton or group an event completed instances for, none of which it
    takes past its ``state_limit``): for each ``(key, subscription, datas)`` in turn, its
    notifications numbered on from its last, appended to ``out`` as ``(key,
    notification)``. One whose ``datas`` raise while read gets none of them (those
    appended are taken back, its count is unchanged) and is handed to ``failed`` with the
    error, which may append its own output in its place; the others go on. One given
    more than its ``limits.outputs`` gets none of them either, but its suspension (as
    ``deliver`` does it), and is handed to ``ended`` if given."""
    append = out.append
    for key, sub, datas in given:
        n = sub.n
        start = len(out)
        most = n + sub.limits.outputs
        try:
            for data in datas:
                if n == most:
                    break
                n += 1
                append((key, Notification(n, seq, data)))
            else:
                sub.n = n
                continue
        except Exception as exc:  # that one fails, the others go on
            del out[start:]
            failed(key, exc)
            continue
        del out[start:]  # one output too many
        append((key, sub._suspend(seq)))
        if ended is not None:
            ended(key)


def _raise(key: Hashable, exc: Exception) -> None:
    raise exc


def run_offline(
    query: Query,
    events: Iterable[Mapping[str, Any] | Event],
    *,
    now: dt.datetime,
    state_limit: int | None = None,
    limits: Limits = LIMITS,
    interrupt: Callable[[], bool] | None = None,
) -> Iterator[dict[str, Any]]:
    """SPEC 8.3's offline contract: events before ``now`` are history, the rest live, in
    the order given; yields each notification's JSON form and ``{"end": true}`` if the
    subscription completes. ``EventError`` for a malformed event.

    ``interrupt`` (a backtest's deadline) is asked before each event and now and then
    inside one (``Subscription.push``); once it answers true the run stops there, with
    nothing more yielded (no end). The caller knows why: it answered.
    """
    sub = Subscription(query, now=now, state_limit=state_limit, limits=limits)
    for raw in events:
        if interrupt is not None and interrupt():
            return
        e = raw if isinstance(raw, Event) else event_from_dict(raw)
        try:
            outputs = sub.push(e, live=e.time >= now, interrupt=interrupt)
        except Interrupted:
            return
        for output in outputs:
            yield output.to_json()
        if sub.finished:
            return
    for output in sub.history_done():
        yield output.to_json()
