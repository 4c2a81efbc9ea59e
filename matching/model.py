"""The data model of the constraint language: plain frozen dataclasses, no Django.

A ``Constraint`` is a tuple of ``Disjunct``s (disjunctive normal form, SPEC 2.4).
A ``Disjunct`` maps each ``Attribute`` (name *and* type, SPEC 2.1) to exactly one
predicate.  Predicates are point-sets:

* ordered types (int, decimal, float, date, timestamp, string) use ``Interval``;
* point attributes use ``PointEq`` / ``PointWithin``;
* box attributes use ``BoxEq`` / ``BoxOverlaps`` / ``BoxContains`` / ``BoxWithin``;
* ``Wildcard`` is the wildcard (``a = *``) of any type.

Invariants kept by the normalizer (and relied on by every matcher):

* an ``Interval`` is never empty and never the whole domain (that is ``Wildcard``);
* on discrete types (int, date) both bounds are closed or absent;
* ``None`` as a bound means unbounded on that side (the flag is then ``False``);
* a ``Box`` has ``x1 <= x2`` and ``y1 <= y2`` (it may be degenerate).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

# The model's public names: ``matching`` re-exports exactly these, and the modules that use
# many of them import the module (``from . import model``) rather than a list of names.
__all__ = [
    "Attribute",
    "Box",
    "BoxContains",
    "BoxEq",
    "BoxOperand",
    "BoxOverlaps",
    "BoxWithin",
    "Constraint",
    "Disjunct",
    "Interval",
    "Point",
    "PointEq",
    "PointWithin",
    "Predicate",
    "Type",
    "Value",
    "Wildcard",
]


class Type(enum.Enum):
    INT = "int"
    DECIMAL = "decimal"
    FLOAT = "float"
    DATE = "date"
    TIMESTAMP = "timestamp"
    STRING = "string"
    POINT = "point"
    BOX = "box"

    # Members are singletons compared by identity, so the identity hash is consistent
    # with equality; Enum's own __hash__ is Python code, and attributes (name, type)
    # are hashed several times per parsed predicate.
    __hash__ = object.__hash__

    @property
    def ordered(self) -> bool:
        return self not in (Type.POINT, Type.BOX)

    @property
    def discrete(self) -> bool:
        return self in (Type.INT, Type.DATE)


# Python representation of a literal of each ordered type.
Value = int | Decimal | float | dt.date | dt.datetime | str


@dataclass(frozen=True)
class Attribute:
    name: str
    type: Type


@dataclass(frozen=True)
class Point:
    x: float
    y: float


@dataclass(frozen=True)
class Box:
    """A closed, axis-aligned rectangle with normalized corners."""

    x1: float
    y1: float
    x2: float
    y2: float

    @staticmethod
    def of(x1: float, y1: float, x2: float, y2: float) -> Box:
        return Box(min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))

    def intersects(self, other: Box) -> bool:
        return (
            self.x1 <= other.x2
            and other.x1 <= self.x2
            and self.y1 <= other.y2
            and other.y1 <= self.y2
        )

    def contains(self, other: Box) -> bool:
        # On each axis, other's range lies within this box's (corners are normalized).
        return (
            self.x1 <= other.x1 <= other.x2 <= self.x2
            and self.y1 <= other.y1 <= other.y2 <= self.y2
        )

    def contains_point(self, p: Point) -> bool:
        return self.x1 <= p.x <= self.x2 and self.y1 <= p.y <= self.y2


@dataclass(frozen=True)
class Wildcard:
    """The wildcard ``a = *``: the whole domain of the attribute's type."""


@dataclass(frozen=True)
class Interval:
    """A non-empty interval of an ordered type; ``None`` bounds are unbounded."""

    lo: Value | None
    lo_closed: bool
    hi: Value | None
    hi_closed: bool


@dataclass(frozen=True)
class PointEq:
    """A point attribute that is ``point``."""

    point: Point


@dataclass(frozen=True)
class BoxOperand:
    """What the predicates written with a box share: the ``box`` they compare the attribute
    with (SPEC 2.2); the subclass says how. The subclasses add no field, so they need no
    decorator of their own: they take the dataclass's ``__init__``, ``__repr__``, ``__hash__``
    and ``__eq__``, which also compares the class (``BoxEq(b) != BoxWithin(b)``)."""

    box: Box


class PointWithin(BoxOperand):
    """A point attribute that lies in ``box``, its edges included."""


class BoxEq(BoxOperand):
    """A box attribute that is ``box``."""


class BoxOverlaps(BoxOperand):
    """A box attribute that shares at least a point with ``box``."""


class BoxContains(BoxOperand):
    """A box attribute that contains ``box``."""


class BoxWithin(BoxOperand):
    """A box attribute that lies inside ``box``."""


Predicate = (
    Wildcard | Interval | PointEq | PointWithin | BoxEq | BoxOverlaps | BoxContains | BoxWithin
)


@dataclass(frozen=True, eq=False)
class Disjunct:
    """A conjunction with at most one predicate per attribute.

    ``items`` keeps the order in which attributes first appeared (for printing);
    equality and hashing ignore that order, so ``x = 1 AND y = 1`` equals
    ``y = 1 AND x = 1``.
    """

    items: tuple[tuple[Attribute, Predicate], ...]
    _map: Mapping[Attribute, Predicate] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_map", dict(self.items))

    @property
    def mapping(self) -> Mapping[Attribute, Predicate]:
        return self._map

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Disjunct):
            return NotImplemented
        return self.mapping == other.mapping

    def __hash__(self) -> int:
        return hash(frozenset(self.items))

    def __iter__(self) -> Iterator[tuple[Attribute, Predicate]]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def get(self, attribute: Attribute) -> Predicate | None:
        return self.mapping.get(attribute)


@dataclass(frozen=True)
class Constraint:
    """A normalized constraint: non-empty, duplicate-free, in source order.

    Printing lives with the printers, which import the model (never the reverse):
    ``matching.to_text`` and ``matching.to_json``.
    """

    disjuncts: tuple[Disjunct, ...]

    def __iter__(self) -> Iterator[Disjunct]:
        return iter(self.disjuncts)

    def __len__(self) -> int:
        return len(self.disjuncts)

    def attributes(self) -> set[Attribute]:
        return {a for d in self.disjuncts for a, _ in d.items}
