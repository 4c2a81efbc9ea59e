"""Patterns that differ only in a threshold's factor, run on one record per start (issue 20).

The shape (``threshold_shape``, read off the parsed pattern): one side, a first source and
one ``NEXT`` step whose condition has a top-level conjunct comparing the candidate's
numeric attribute by ``<``, ``<=``, ``>`` or ``>=`` with a number literal ``L`` combined
with an expression ``X`` of the first event by ``*``, ``+`` or ``-`` (``b.price > 1.05 *
a.price``, either side, either order), the condition's other conjuncts holding no
arithmetic. Patterns of this shape whose texts are equal but for ``L``, ``WITHIN``,
``WHERE`` and ``SELECT`` form one ``ThresholdGroup``: SPEC 8.3's "a trade, then the next
trade on the same market more than p% higher", one pattern per p and window.

Alone, each member keeps one instance per event ``a`` that passed the first source after
it joined, until the first later event ``b`` that passes the step's source and its
condition (the instance completes with ``b`` and leaves) or until an event comes more than
its ``WITHIN`` after ``a`` (the instance is dropped); a ``b`` failing the condition is
skipped and the instance waits on. The group keeps one *record* per such ``a`` instead,
with the members that still wait on it, and finds the members a ``b`` completes without
evaluating them one by one:

* The condition is ``rest and b.x op T(L)``, with ``rest`` (the other conjuncts) the same
  for every member, evaluated once per record.
* For one ``a``, ``T(L)`` (``L * X``, ``X + L``, ...) is monotone in ``L``: decimal
  arithmetic rounds monotonically, and the direction is fixed by the operator and, for
  ``*``, by the sign of ``X``. So the members whose threshold a ``b`` satisfies form one
  end of the members sorted by ``L``, found by bisection, and since each instance leaves
  at the first ``b`` that completes it, the members still waiting on ``a`` are an interval
  of that order that each such ``b`` shortens from the same end.
* Members whose ``WITHIN`` the age of ``a`` exceeds are skipped where the interval passes
  them: alone, that instance was dropped before ``b`` was offered.

What the group cannot follow exactly it refuses (``advance`` returns ``None`` before
changing anything), and ``multi.py`` then gives every member its own instances
(``waiting_on``, ``Automaton.restart``) and runs it alone: a start whose threshold would
raise for some member (an arithmetic overflow, which alone fails that pattern), and a
start after which some member could hold more instances than its ``state_limit``.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Hashable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from matching.subscriptions.events import Event
from matching.subscriptions.run.predicates import COMPARE

from .automaton import (
    ARITHMETIC,
    Automaton,
    Getter,
    Instance,
    Test,
    compile_cond,
    compile_expr,
    order_readings,
    reads_candidate,
)
from .groups import Done, Generation, GroupMember, Record, RecordGroup, hand_out
from .model import All, Arithmetic, Compare, Cond, Expr, Literal, Matches, Pattern

_FACTOR = Literal("")  # in a group's key in place of the factor: no parsed number is a string


@dataclass(frozen=True)
class Shape:
    """What ``threshold_shape`` found: ``key`` (the pattern without factor, ``WITHIN``,
    ``WHERE`` and ``SELECT``: equal for the members of one group), the ``factor`` ``L``,
    the candidate's ``attribute`` and the comparison ``op`` with the candidate on the left,
    the arithmetic ``combine`` and whether ``L`` is its left operand, the expression
    ``cross`` (``X``) and the condition's other conjuncts ``rest``."""

    key: Hashable
    factor: Decimal
    attribute: str
    op: str
    combine: str
    factor_left: bool
    cross: Expr
    rest: tuple[Cond, ...]


def threshold_shape(pattern: Pattern) -> Shape | None:
    """The group shape of ``pattern`` (module docstring), or ``None``."""
    if len(pattern.steps) != 1 or pattern.steps[0].kind != "next":
        return None
    step = pattern.steps[0]
    alias = step.source.alias
    parts = step.condition.parts if isinstance(step.condition, All) else (step.condition,)
    for i, part in enumerate(parts):
        found = _threshold_conjunct(part, alias)
        if found is None:
            continue
        rest = parts[:i] + parts[i + 1 :]
        if any(has_arithmetic(c) for c in rest):
            return None
        attribute, op, arithmetic, factor_left = found
        factor = arithmetic.left if factor_left else arithmetic.right
        cross = arithmetic.right if factor_left else arithmetic.left
        assert isinstance(factor, Literal) and isinstance(factor.value, Decimal)
        # the factor's place is kept in the key: factors elsewhere make another group
        blank = (
            replace(arithmetic, left=_FACTOR) if factor_left else replace(arithmetic, right=_FACTOR)
        )
        assert isinstance(part, Compare)
        keyed = replace(part, left=blank) if part.left is arithmetic else replace(part, right=blank)
        condition = keyed if not rest else All((*parts[:i], keyed, *parts[i + 1 :]))
        key = replace(
            pattern,
            select=(),
            where=None,
            within=None,
            steps=(replace(step, condition=condition),),
        )
        return Shape(key, factor.value, attribute, op, arithmetic.op, factor_left, cross, rest)
    return None


def _threshold_conjunct(part: Cond, alias: str) -> tuple[str, str, Arithmetic, bool] | None:
    """``(attribute, op, arithmetic, factor_left)`` when ``part`` compares ``alias.x``
    (numeric) with ``L op X`` or ``X op L`` (``op`` one of ``* + -``, ``L`` a number
    literal, ``X`` not reading the candidate), ``op`` read with the candidate on the left."""
    for attribute, op, other in order_readings(part, alias):
        if not isinstance(other, Arithmetic) or other.op not in ARITHMETIC:
            continue
        for factor_left, factor, cross in ((True, other.left, other.right),
                                           (False, other.right, other.left)):  # fmt: skip
            if (
                isinstance(factor, Literal)
                and isinstance(factor.value, Decimal)
                and not reads_candidate(cross, alias)
            ):
                return attribute, op, other, factor_left
    return None


def has_arithmetic(c: Cond) -> bool:
    """Whether evaluating ``c`` computes anything (and so might raise, as an overflow)."""
    if isinstance(c, Compare):
        return isinstance(c.left, Arithmetic) or isinstance(c.right, Arithmetic)
    if isinstance(c, Matches):
        return False
    return any(has_arithmetic(p) for p in c.parts)


class _Record(Record):
    """One start ``a`` (``start``: an instance at the step with ``a`` bound) and the
    members still waiting on it: ``generation.members[lo:hi]`` (some gone or expired);
    ``first`` is true when a ``b`` completes a prefix of that order (false: a suffix),
    ``None`` when no ``b`` can complete any (``X`` is absent)."""

    __slots__ = ("cross", "lo", "hi", "first")

    def __init__(
        self, start: Instance, cross: Any, generation: Generation, first: bool | None
    ) -> None:
        super().__init__(start, generation)
        self.cross = cross
        self.lo = 0
        self.hi = len(generation.members)
        self.first = first


@dataclass(eq=False)
class ThresholdGroup(RecordGroup):
    """The members of one ``Shape.key``; ``automaton`` is one member's pattern compiled
    without ``WHERE`` and ``WITHIN`` (``multi.py`` checks the sources' filters with it).
    ``records`` (the starts some member may still wait on) is truthy exactly while the
    step's source matters, as ``Node.waiting`` is for an automaton's step (``RecordGroup``)."""

    shape: Shape
    automaton: Automaton

    def __post_init__(self) -> None:
        aliases = self.automaton.pattern.aliases
        self._rest: Test | None = (
            None if not self.shape.rest else compile_cond(_conjunction(self.shape.rest), aliases, 1)
        )
        self._cross: Getter = compile_expr(self.shape.cross, aliases, 1)
        self._combine = ARITHMETIC[self.shape.combine]
        self._compare = COMPARE[self.shape.op]
        self.attribute = self.shape.attribute
        self._begin()

    def join(self, payload: Any, automaton: Automaton, shape: Shape, limit: int) -> GroupMember:
        """Add a pattern holding no instance (of this group's key), sorted by its factor."""
        return self._add(payload, automaton, limit, shape.factor)

    def threshold(self, factor: Decimal, cross: Any) -> Any:
        return (
            self._combine(factor, cross) if self.shape.factor_left else self._combine(cross, factor)
        )

    def _open(self, record: _Record) -> bool:
        return record.lo < record.hi

    def _start(self, e: Event) -> _Record:
        start = Instance(1, (e,), (None,), {}, (), 0)
        members = self.generation.members
        cross = self._cross(start, None)  # an ArithmeticError refuses the event (RecordGroup)
        if cross is not None:  # the extreme factors: no threshold between them raises
            self.threshold(members[0].literal, cross)
            self.threshold(members[-1].literal, cross)
        if cross is None:
            return _Record(start, cross, self.generation, None)
        combine, factor_left = self.shape.combine, self.shape.factor_left
        if combine == "*":
            rising = (cross > 0) - (cross < 0)
        else:
            rising = 1 if combine == "+" or factor_left else -1
        above = self.shape.op in (">", ">=")
        # b.x > T(L): the small thresholds are met first, the small factors if T rises
        first = rising >= 0 if above else rising <= 0
        return _Record(start, cross, self.generation, first)

    def _offer(self, record: _Record, e: Event, v: Any, now: dt.datetime, done: Done) -> None:
        if record.first is None:
            return
        self.touched += 1
        members, cross, compare = record.generation.members, record.cross, self._compare

        def met(m: GroupMember) -> bool:
            t = self.threshold(m.literal, cross)
            return t is not None and compare(v, t)

        lo, hi = record.lo, record.hi
        if record.first:
            if not met(members[lo]) or (self._rest is not None and not self._rest(record.start, e)):
                return
            cut = bisect.bisect_left(members, True, lo + 1, hi, key=lambda m: not met(m))
            taken, record.lo = members[lo:cut], cut
        else:
            if not met(members[hi - 1]) or (
                self._rest is not None and not self._rest(record.start, e)
            ):
                return
            cut = bisect.bisect_left(members, True, lo, hi - 1, key=met)
            taken, record.hi = members[cut:hi], cut
        hand_out(record, taken, e, now - record.event.time, done)

    def waits(self, record: _Record, member: GroupMember) -> bool:
        i = record.generation.position(member)
        return i is not None and record.lo <= i < record.hi


def _conjunction(parts: tuple[Cond, ...]) -> Cond:
    return parts[0] if len(parts) == 1 else All(parts)
