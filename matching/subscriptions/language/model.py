"""The parsed query: frozen dataclasses, compared by value.

Two texts that mean the same query parse to equal objects (``print`` then ``parse``
gives back an equal query). Conditions are kept normalized (SPEC 2.4, each conjunct on
its own) as a disjunction of conjunctions of ``AttrTest`` / ``SubjectTest``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property

from matching import Predicate, Type, Value
from matching.subjects import SubjectPattern, compile_pattern
from matching.subscriptions.patterns.model import PatternQuery

from .forms import Kind


@dataclass(frozen=True)
class AttrTest:
    """``attribute`` (of ``alias``'s event in form 2, else ``None``) lies in ``predicate``."""

    alias: str | None
    attribute: str
    type: Type
    predicate: Predicate


@dataclass(frozen=True)
class SubjectTest:
    """``subject MATCHES 'pattern'``, or its negation."""

    alias: str | None
    pattern: str
    negated: bool = False

    @cached_property
    def compiled(self) -> SubjectPattern:
        return compile_pattern(self.pattern)


Test = AttrTest | SubjectTest


@dataclass(frozen=True)
class Condition:
    """One conjunct, normalized on its own: it holds when every test of some disjunct holds."""

    disjuncts: tuple[tuple[Test, ...], ...]

    @property
    def alias(self) -> str | None:
        return next(t.alias for d in self.disjuncts for t in d)


@dataclass(frozen=True)
class Join:
    """``left_alias.left op right_alias.right`` between two events of a composite."""

    left_alias: str
    left: str
    op: str  # one of = != < <= > >=
    right_alias: str
    right: str


@dataclass(frozen=True)
class TimeBound:
    """``NOW``, ``NOW +/- <d>`` (``offset`` seconds) or an absolute ``TIMESTAMP``."""

    offset: int = 0
    at: dt.datetime | None = None

    def resolve(self, now: dt.datetime) -> dt.datetime:
        if self.at is not None:
            return self.at
        try:
            return now + dt.timedelta(seconds=self.offset)
        except OverflowError:
            # Beyond the calendar: as far as time goes in that direction.
            return (
                dt.datetime.max.replace(tzinfo=dt.UTC)
                if self.offset > 0
                else (dt.datetime.min.replace(tzinfo=dt.UTC))
            )


@dataclass(frozen=True)
class TimeRange:
    """``start_time <= time < end_time``; ``start`` ``None`` means ``NOW``, ``end`` none."""

    start: TimeBound | None = None
    end: TimeBound | None = None


@dataclass(frozen=True)
class Attr:
    """A selected attribute, with its ``AS`` name if any (form 2: ``alias.attribute``)."""

    attribute: str
    name: str | None = None
    alias: str | None = None


AGGREGATES = ("AVG", "MIN", "MAX", "SUM", "COUNT")


@dataclass(frozen=True)
class Aggregate:
    """``FUNC(attribute, n)`` over a window of ``n`` events; ``name`` is its ``AS`` name."""

    func: str  # one of AGGREGATES
    attribute: str
    n: int
    type: Type  # the attribute's type
    name: str | None = None


Item = Attr | Aggregate


@dataclass(frozen=True)
class Having:
    """``HAVING aggregate op value [RESET]``; ``value`` has the aggregate's result type."""

    aggregate: Aggregate
    op: str  # one of = != < <= > >=
    value: Value
    reset: bool = False


@dataclass(frozen=True)
class AtomicQuery:
    """Form 1. ``select`` is ``None`` for ``SELECT *``."""

    select: tuple[Item, ...] | None
    conditions: tuple[Condition, ...] = ()
    time: TimeRange = field(default_factory=TimeRange)
    group_by: tuple[str, ...] = ()
    having: Having | None = None

    kind = Kind.EVENTS

    @property
    def aggregates(self) -> tuple[Aggregate, ...]:
        return tuple(i for i in self.select or () if isinstance(i, Aggregate))


@dataclass(frozen=True)
class CompositeQuery:
    """Form 2. ``select`` is ``None`` for ``SELECT *``; ``times`` holds each alias's range
    (an alias's own bound, else the unqualified default, else ``NOW`` and no end).
    """

    select: tuple[Attr, ...] | None
    aliases: tuple[str, ...]
    conditions: tuple[Condition, ...] = ()
    joins: tuple[Join, ...] = ()
    time: TimeRange = field(default_factory=TimeRange)
    alias_times: tuple[tuple[str, TimeRange], ...] = ()

    kind = Kind.COMPOSITE

    def range_of(self, alias: str) -> TimeRange:
        """The alias's range: its own bounds, each falling back to the unqualified default."""
        own = dict(self.alias_times).get(alias, TimeRange())
        return TimeRange(own.start or self.time.start, own.end or self.time.end)


@dataclass(frozen=True)
class Threshold:
    """``NOTIFY WHEN CHANGED BY amount`` (``amount%`` when ``percent``); ``amount >= 0``."""

    amount: Decimal
    percent: bool = False


@dataclass(frozen=True)
class WatchQuery:
    """Form 4, a watch over the open offers.

    A range watch has ``func`` ``MIN`` or ``MAX`` and ``conditions``: one subject test and
    any number of range tests on one numeric attribute, the key (each conjunct normalized
    on its own, as written). A single-offer watch has ``func`` ``None`` and ``offer`` set.
    """

    attribute: str
    func: str | None = None
    offer: int | None = None
    conditions: tuple[Condition, ...] = ()
    threshold: Threshold | None = None

    kind = Kind.STATE

    @property
    def tests(self) -> tuple[Test, ...]:
        """Every test of the range watch (the parser keeps one disjunct per conjunct)."""
        return tuple(t for c in self.conditions for t in c.disjuncts[0])

    @property
    def key(self) -> str | None:
        """The key attribute of a range watch, or ``None`` when it has no key test."""
        return next(
            (
                t.attribute
                for t in self.tests
                if isinstance(t, AttrTest) and t.attribute != "subject"
            ),
            None,
        )


Query = AtomicQuery | CompositeQuery | PatternQuery | WatchQuery
