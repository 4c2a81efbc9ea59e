"""Form 3 of SPEC 8.3 (event patterns, Cayuga's algebra) as frozen dataclasses.

A pattern is left-deep: a first source, then ``NEXT`` and ``FOLD`` steps, each with its
own source. Conditions are trees of ``Compare``/``Matches`` joined by ``All``/``Any``,
kept with ``NOT`` already pushed down (a negated comparison flips its operator), so that
every comparison means the same thing wherever it sits: one that meets an absent
attribute or a division by zero is false (SPEC 8.3's fine points). Two texts that mean the
same pattern parse to equal objects, and the printer's text parses back to an equal one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property

from matching.subjects import SubjectPattern, compile_pattern
from matching.subscriptions.language.forms import Kind


@dataclass(frozen=True)
class Literal:
    """A number (always ``Decimal``), a string or a timestamp."""

    value: Decimal | str | dt.datetime


@dataclass(frozen=True)
class Duration:
    """A duration literal (``30m``): a number of seconds, printed with its largest unit."""

    seconds: int


@dataclass(frozen=True)
class Ref:
    """``alias.attr`` or ``alias.last.attr``; ``alias`` is ``None`` inside a ``FILTER``,
    where a bare attribute names the incoming event's own attribute."""

    alias: str | None
    attribute: str
    last: bool = False


@dataclass(frozen=True)
class AggregateRef:
    """The value of an aggregate a ``FOLD`` named with ``AS``."""

    name: str


@dataclass(frozen=True)
class Dur:
    """``DUR``: seconds from the first bound event to the last (or to the candidate)."""


@dataclass(frozen=True)
class Arithmetic:
    op: str  # one of + - * /
    left: Expr
    right: Expr


Expr = Literal | Duration | Ref | AggregateRef | Dur | Arithmetic


@dataclass(frozen=True)
class Compare:
    op: str  # one of = != < <= > >=
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Matches:
    """``ref MATCHES 'pattern'`` (``ref`` is a subject), or its negation."""

    ref: Ref
    pattern: str
    negated: bool = False

    @cached_property
    def compiled(self) -> SubjectPattern:
        return compile_pattern(self.pattern)


@dataclass(frozen=True)
class All:
    """Every part holds (two or more parts, none of them an ``All``)."""

    parts: tuple[Cond, ...]


@dataclass(frozen=True)
class Any_:
    """Some part holds (two or more parts, none of them an ``Any_``)."""

    parts: tuple[Cond, ...]


Cond = Compare | Matches | All | Any_


@dataclass(frozen=True)
class Source:
    """``[FILTER{static}(]EVENTS[)] AS alias``; ``filter`` ``None`` is every event."""

    alias: str
    filter: Cond | None = None


@dataclass(frozen=True)
class FoldAggregate:
    """``COUNT AS name`` or ``FUNC(b.attr) AS name`` over a ``FOLD``'s iterations."""

    func: str  # COUNT SUM AVG MIN MAX
    argument: Ref | None
    name: str


@dataclass(frozen=True)
class Step:
    """``NEXT{condition}`` or ``FOLD{condition, rebind, aggregates}`` and its source."""

    kind: str  # "next" or "fold"
    condition: Cond
    source: Source
    rebind: Cond | None = None
    aggregates: tuple[FoldAggregate, ...] = ()


@dataclass(frozen=True)
class PatternItem:
    """A selected item: a ``Ref``, an aggregate, ``DUR``, or ``start``/``end`` (``Bound``)."""

    expr: Ref | AggregateRef | Dur | Bound
    name: str | None = None


@dataclass(frozen=True)
class Bound:
    """``start`` or ``end``: the time of the first or the last bound event."""

    which: str  # "start" or "end"


@dataclass(frozen=True)
class Pattern:
    """One ``SELECT ... FROM ... [WHERE] [WITHIN]``."""

    select: tuple[PatternItem, ...]
    first: Source
    steps: tuple[Step, ...] = ()
    where: Cond | None = None
    within: int | None = None  # seconds

    @property
    def aliases(self) -> tuple[str, ...]:
        return (self.first.alias, *(s.source.alias for s in self.steps))


@dataclass(frozen=True)
class PatternQuery:
    """Form 3: one pattern, or several joined with ``UNION`` (outputs of all are kept)."""

    sides: tuple[Pattern, ...]

    kind = Kind.PATTERN
