"""Patterns that differ only in two literal bounds, run on one record per start (issue 20).

The shape (``bound_shape``, read off the parsed pattern): one side, a first source whose
static filter has a top-level conjunct comparing a numeric attribute with a number literal
``X`` by ``<``, ``<=``, ``>`` or ``>=`` (``price > 1.00``), and one ``NEXT`` step whose
condition has a top-level conjunct comparing the candidate's numeric attribute with a
number literal ``Y`` the same way (``b.price < 0.95``), the condition's other conjuncts
holding no arithmetic. Patterns of this shape whose texts are equal but for ``X``, ``Y``,
``WITHIN``, ``WHERE`` and ``SELECT`` form one ``BoundGroup``: SPEC 8.3's "a trade above X,
then the next trade on the same market below Y", one pattern per pair of prices.

Alone, each member keeps one instance per event ``a`` passing its first source (``a.x op
X`` among its conjuncts) after it joined, until the first later event ``b`` that passes
the step's source and its condition (``rest and b.y op Y``: the instance completes and
leaves) or until an event comes more than its ``WITHIN`` after ``a``; a ``b`` failing the
condition is skipped and the instance waits on. The group keeps one *record* per event
``a`` that passes the first source without ``X`` and on which some member waits, and
finds the members a ``b`` completes without evaluating them one by one:

* ``rest`` is the same for every member: it is evaluated once per record and ``b``.
* Of the ``b``s offered to a record that passed ``rest``, only the most extreme value
  matters (``best``: the smallest for ``<`` and ``<=``, the largest for ``>`` and ``>=``):
  a member still waits on the record exactly while no such ``b`` met its ``Y``, that is
  while ``best op Y`` fails. So a new ``b`` completes the members whose ``Y`` lies between
  its value and ``best``, one slice of the members sorted by ``Y``, found by bisection; of
  those, the ones whose ``X`` the record's ``a`` met, and whose ``WITHIN`` the age of ``a``
  does not exceed (alone, that instance was dropped before ``b`` was offered).
* Members whose ``X`` the record's ``a`` does not meet never waited on it.

What the group cannot follow exactly it refuses (``advance`` returns ``None`` before
changing anything) and ``multi.py`` gives every member its own instances (``waiting_on``,
``Automaton.restart``) and runs it alone: a start after which some member could hold more
instances than its ``state_limit``.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Hashable
from dataclasses import dataclass, replace
from decimal import Decimal
from itertools import compress, repeat
from typing import Any

from matching.subscriptions.events import Event
from matching.subscriptions.run.predicates import COMPARE

from .automaton import Automaton, Instance, Test, compile_cond, order_readings
from .groups import Done, Generation, GroupMember, Record, RecordGroup, hand_out
from .model import All, Compare, Cond, Literal, Pattern, Ref
from .thresholds import has_arithmetic

_BLANK = Literal("")  # in a group's key in place of a bound: no parsed number is a string
# The empty conjunction, true of every event: the step condition of a group whose
# members' conditions are their bound alone (only the group's runner holds it).
_TRUE = All(())


@dataclass(frozen=True)
class BoundShape:
    """What ``bound_shape`` found: ``key`` (the pattern without ``X``, ``Y``, ``WITHIN``,
    ``WHERE`` and ``SELECT``: equal for the members of one group), the first event's
    ``start_attribute`` compared by ``start_op`` with ``start_bound`` (``X``, the event's
    value on the left), the candidate's ``attribute`` compared by ``op`` with ``bound``
    (``Y``, the candidate on the left), the condition's other conjuncts ``rest`` and
    ``runner``, the pattern without either bound, ``WHERE`` and ``WITHIN``, whose sources
    are the group's."""

    key: Hashable
    start_attribute: str
    start_op: str
    start_bound: Decimal
    attribute: str
    op: str
    bound: Decimal
    rest: tuple[Cond, ...]
    runner: Pattern


def bound_shape(pattern: Pattern) -> BoundShape | None:
    """The group shape of ``pattern`` (module docstring), or ``None``."""
    if len(pattern.steps) != 1 or pattern.steps[0].kind != "next" or pattern.first.filter is None:
        return None
    step = pattern.steps[0]
    firsts = _parts(pattern.first.filter)
    conditions = _parts(step.condition)
    start = next(
        (
            (i, found)
            for i, part in enumerate(firsts)
            if (found := _literal_bound(part, None)) is not None
        ),
        None,
    )
    candidate = next(
        (
            (i, found)
            for i, part in enumerate(conditions)
            if (found := _literal_bound(part, step.source.alias)) is not None
        ),
        None,
    )
    if start is None or candidate is None:
        return None
    (i, (start_attribute, start_op, x)), (j, (attribute, op, y)) = start, candidate
    rest = conditions[:j] + conditions[j + 1 :]
    if any(has_arithmetic(c) for c in rest):
        return None
    blank_first = All((*firsts[:i], Compare(start_op, Ref(None, start_attribute), _BLANK),
                       *firsts[i + 1 :]))  # fmt: skip
    blank_step = All((*conditions[:j], Compare(op, Ref(step.source.alias, attribute), _BLANK),
                      *conditions[j + 1 :]))  # fmt: skip
    key = replace(
        pattern,
        select=(),
        where=None,
        within=None,
        first=replace(pattern.first, filter=blank_first),
        steps=(replace(step, condition=blank_step),),
    )
    runner = replace(
        pattern,
        where=None,
        within=None,
        first=replace(pattern.first, filter=_join(firsts[:i] + firsts[i + 1 :])),
        steps=(replace(step, condition=_join(rest) or _TRUE),),
    )
    # tagged: no threshold group's key (patterns_thresholds.py) can equal it
    return BoundShape(("bounds", key), start_attribute, start_op, x, attribute, op, y, rest, runner)


def _parts(c: Cond) -> tuple[Cond, ...]:
    return c.parts if isinstance(c, All) else (c,)


def _join(parts: tuple[Cond, ...]) -> Cond | None:
    """The conjunction of ``parts``; ``None`` for none."""
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else All(parts)


def _literal_bound(part: Cond, alias: str | None) -> tuple[str, str, Decimal] | None:
    """``(attribute, op, L)`` when ``part`` compares the numeric attribute of ``alias``
    (``None``: a static filter's bare attribute; otherwise the candidate's, not ``.last``)
    with a number literal ``L`` by an order, ``op`` read with the attribute on the left."""
    for attribute, op, other in order_readings(part, alias):
        if isinstance(other, Literal) and isinstance(other.value, Decimal):
            return attribute, op, other.value
    return None


class _Record(Record):
    """One start ``a`` (``start``: an instance at the step with ``a`` bound, ``value``
    its compared attribute), the ``generation`` of members when it started, ``best``
    (module docstring; ``None`` before any ``b`` passed) and ``left``, how many of those
    members have not been completed on it (gone or expired ones included)."""

    __slots__ = ("value", "best", "left")

    def __init__(self, start: Instance, value: Any, generation: Generation, left: int) -> None:
        super().__init__(start, generation)
        self.value = value
        self.best: Any = None
        self.left = left


@dataclass(eq=False)
class BoundGroup(RecordGroup):
    """The members of one ``BoundShape.key``; ``automaton`` is the shape's ``runner``
    compiled (``multi.py`` checks the sources' filters with it). ``records`` (the starts
    some member may still wait on) is truthy exactly while the step's source matters, as
    ``Node.waiting`` is for an automaton's step (``RecordGroup``)."""

    shape: BoundShape
    automaton: Automaton

    def __post_init__(self) -> None:
        aliases = self.automaton.pattern.aliases
        rest = _join(self.shape.rest)
        self._rest: Test | None = None if rest is None else compile_cond(rest, aliases, 1)
        self._starts = COMPARE[self.shape.start_op]
        self._compare = COMPARE[self.shape.op]
        self._falling = self.shape.op in ("<", "<=")  # members met by lower values
        self.attribute = self.shape.attribute
        self._begin()

    def join(
        self, payload: Any, automaton: Automaton, shape: BoundShape, limit: int
    ) -> GroupMember:
        """Add a pattern holding no instance (of this group's key), sorted by its ``Y``."""
        return self._add(payload, automaton, limit, shape.bound, shape.start_bound)

    def _open(self, record: _Record) -> bool:
        return record.left > 0

    def _start(self, e: Event) -> _Record | None:
        value = e.values.get(self.shape.start_attribute)
        if value is None:
            return None  # a comparison with an absent value is false: no member waits
        starts, op = self.generation.start_literals, self.shape.start_op
        # value op X: the members whose X is below value for > (up to it for >=), ...
        if op == ">":
            waiting = bisect.bisect_left(starts, value)
        elif op == ">=":
            waiting = bisect.bisect_right(starts, value)
        elif op == "<":
            waiting = len(starts) - bisect.bisect_right(starts, value)
        else:
            waiting = len(starts) - bisect.bisect_left(starts, value)
        if not waiting:
            return None
        return _Record(Instance(1, (e,), (None,), {}, (), 0), value, self.generation, waiting)

    def _slice(self, record: _Record, v: Any) -> tuple[int, int]:
        """Where in ``record``'s members (by ``Y``) are those ``v`` completes and that no
        earlier ``b`` did: ``v op Y`` holds and ``best op Y`` does not."""
        bounds, best = record.generation.literals, record.best
        op = self.shape.op
        if op == "<":  # Y in (v, best]
            lo = bisect.bisect_right(bounds, v)
            hi = len(bounds) if best is None else bisect.bisect_right(bounds, best)
        elif op == "<=":  # Y in [v, best)
            lo = bisect.bisect_left(bounds, v)
            hi = len(bounds) if best is None else bisect.bisect_left(bounds, best)
        elif op == ">":  # Y in [best, v)
            lo = 0 if best is None else bisect.bisect_left(bounds, best)
            hi = bisect.bisect_left(bounds, v)
        else:  # Y in (best, v]
            lo = 0 if best is None else bisect.bisect_right(bounds, best)
            hi = bisect.bisect_right(bounds, v)
        return lo, hi

    def _offer(self, record: _Record, e: Event, v: Any, now: dt.datetime, done: Done) -> None:
        self.touched += 1
        best = record.best
        if best is not None and (v >= best if self._falling else v <= best):
            return  # v is not past best: the slice between them (_slice) is empty
        lo, hi = self._slice(record, v)
        if lo >= hi:
            return  # no member changes: best may stay as it is
        if self._rest is not None and not self._rest(record.start, e):
            return
        if record.best is None or (
            v < record.best if self.shape.op in ("<", "<=") else v > record.best
        ):
            record.best = v
        generation = record.generation
        # those whose X the start did not meet never waited on it (tested in C: the slice
        # may hold many members for a few taken)
        met = map(self._starts, repeat(record.value), generation.member_starts[lo:hi])
        taken = list(compress(generation.members[lo:hi], met))
        record.left -= len(taken)
        hand_out(record, taken, e, now - record.event.time, done)

    def waits(self, record: _Record, member: GroupMember) -> bool:
        return self._starts(record.value, member.start_literal) and (
            record.best is None or not self._compare(record.best, member.literal)
        )
