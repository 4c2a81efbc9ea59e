"""Constraints as rows whose comparisons decide SPEC 3: what the Spark matcher joins.

Plain Python (no Spark, no Django), so that it runs on the executors and is tested alone.

Per disjunct, one *disjunct row* ``(id, dj, shape)`` and one *shape row* naming its fields
(type-qualified keys such as ``int:lot``, as the range store writes them) by role: all of
them, the wildcards, the *loose* box predicates (``OVERLAPS`` and ``CONTAINS``, of which any
two intersect) and the rest (*tight*). Per non-wildcard predicate, one *predicate row*
``(id, dj, shape, field, lo, lo_closed, hi, hi_closed, loose, g0..g7)``. A wildcard has no
predicate row at all: it is only a name in its disjunct's shape.

Ordered values become byte strings whose unsigned lexicographic order (Spark's order of
``BinaryType``, and Python's of ``bytes``) is the order of the values, so one pair of
``lo``/``hi`` columns serves every ordered type and every comparison is exact:

* int: the value plus 2**63 as 8 big-endian bytes;
* date: the proleptic ordinal as 4 big-endian bytes;
* timestamp: microseconds since 1970-01-01T00:00Z plus 2**63, 8 bytes (the instant, whatever
  the zone it was written in);
* float: the IEEE 754 bits with the sign bit flipped (non-negative) or all bits flipped
  (negative), 8 bytes; ``-0.0`` is written as ``0.0``, which it equals;
* string: UTF-8, whose byte order is code point order (SPEC 2.1);
* decimal: any number of digits, exactly (see ``decimal_key``).

``None`` is an unbounded side. The normalizer's canonical intervals (closed bounds on the
discrete types) are kept as they are, so two rows intersect exactly when
``matching.intervals.overlaps`` says so.

Points and boxes are regions of 4-D "box space" ``(x1, y1, x2, y2)`` with closed bounds,
infinite where a side is open-ended:

* ``point = p`` is the box ``(p.x, p.y, p.x, p.y)`` and ``point WITHIN B`` every degenerate box
  in B: ``x1, x2`` in ``[B.x1, B.x2]`` and ``y1, y2`` in ``[B.y1, B.y2]``;
* ``box = A`` is the single box A; ``OVERLAPS B`` is ``x1 <= B.x2, y1 <= B.y2, x2 >= B.x1,
  y2 >= B.y1``; ``CONTAINS B`` is ``x1 <= B.x1, y1 <= B.y1, x2 >= B.x2, y2 >= B.y2``;
  ``WITHIN B`` is ``B.x1 <= x1, x2 <= B.x2`` and the same for y.

Two predicates intersect (SPEC 3.2) exactly when their regions share a valid box, i.e. the
regions overlap in all four dimensions and the overlap holds some box with ``x1 <= x2`` and
``y1 <= y2``: ``max(lo_x1) <= min(hi_x2)`` and ``max(lo_y1) <= min(hi_y2)``. For points the
regions only hold degenerate boxes, and the same test is "they share a point". The columns
``g0..g3`` are the lower corner of the region and ``g4..g7`` the upper one; the x1 dimension is
also written into ``lo``/``hi`` (as float keys) so that every type is bucketed the same way.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import struct
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

from matching import model

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)
_SIGN = 1 << 63
_MASK = (1 << 64) - 1
INF = math.inf

# Decimal keys: a sign byte, then (for non-zero values) the exponent and the digits.
_NEGATIVE, _ZERO, _POSITIVE = b"\x00", b"\x01", b"\x02"
_TERMINATOR = b"\xff"  # above every inverted digit (0xc6..0xcf)
_INVERT = bytes(255 - i for i in range(256))


def field_key(attribute: model.Attribute) -> str:
    """``int:lot``: the name and the type, as the range store keys its fields."""
    return f"{attribute.type.value}:{attribute.name}"


def int_key(value: int) -> bytes:
    return struct.pack(">Q", value + _SIGN)


def date_key(value: dt.date) -> bytes:
    return struct.pack(">I", value.toordinal())


def timestamp_key(value: dt.datetime) -> bytes:
    micros = (value - _EPOCH) // _MICROSECOND
    return struct.pack(">Q", micros + _SIGN)


def float_key(value: float) -> bytes:
    if value == 0.0:
        value = 0.0  # -0.0 equals 0.0 and must get the same key
    (bits,) = struct.unpack(">Q", struct.pack(">d", value))
    bits = (~bits & _MASK) if bits & _SIGN else bits | _SIGN
    return struct.pack(">Q", bits)


def string_key(value: str) -> bytes:
    return value.encode("utf-8")


def decimal_key(value: Decimal) -> bytes:
    """An order-preserving key for a finite decimal of any precision.

    A non-zero value is ``0.d1d2...dn * 10**e`` with ``d1 != 0`` and no trailing zero, so
    equal values (``1.0``, ``1.00``) get one key. A positive key is ``0x02``, ``e + 2**31``
    as 4 big-endian bytes, then the digits as ASCII: a larger exponent is a larger number,
    and for one exponent the digit strings compare as the numbers do (a prefix is smaller).
    A negative key is ``0x00`` and the same bytes inverted, closed by ``0xff`` so that a
    shorter digit string (a smaller magnitude, a larger number) sorts after a longer one
    that continues it. Zero is ``0x01``.
    """
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int), "NaN and infinities are not values"
    text = "".join(map(str, digits)).lstrip("0")
    if not text:
        return _ZERO
    stripped = text.rstrip("0")
    e = exponent + len(text)  # value = 0.<text> * 10**e
    body = struct.pack(">I", e + (1 << 31)) + stripped.encode("ascii")
    if not sign:
        return _POSITIVE + body
    return _NEGATIVE + body.translate(_INVERT) + _TERMINATOR


def value_key(t: model.Type, value: model.Value) -> bytes:
    """The order-preserving key of a value of the ordered type ``t``."""
    if t is model.Type.INT:
        return int_key(value)  # type: ignore[arg-type]  # t says which kind of value it is
    if t is model.Type.DECIMAL:
        return decimal_key(value)  # type: ignore[arg-type]  # as above
    if t is model.Type.FLOAT:
        return float_key(float(value))  # type: ignore[arg-type]  # as above
    if t is model.Type.DATE:
        return date_key(value)  # type: ignore[arg-type]  # as above
    if t is model.Type.TIMESTAMP:
        return timestamp_key(value)  # type: ignore[arg-type]  # as above
    if t is model.Type.STRING:
        return string_key(value)  # type: ignore[arg-type]  # as above
    raise TypeError(f"{t} has no ordered values")


Region = tuple[float, float, float, float, float, float, float, float]
"""A 4-D region: lower corner (x1, y1, x2, y2), then upper corner."""


def region(pred: model.Predicate) -> Region:
    """The region of box space that a point or box predicate allows (see the module doc)."""
    kind = type(pred)
    if kind is model.PointEq:
        x, y = pred.point.x, pred.point.y  # type: ignore[union-attr]  # kind is type(pred): mypy does not narrow through it
        return (x, y, x, y, x, y, x, y)
    b = pred.box  # type: ignore[union-attr]  # the other point and box predicates all have one
    if kind is model.PointWithin or kind is model.BoxWithin:
        return (b.x1, b.y1, b.x1, b.y1, b.x2, b.y2, b.x2, b.y2)
    if kind is model.BoxEq:
        return (b.x1, b.y1, b.x2, b.y2, b.x1, b.y1, b.x2, b.y2)
    if kind is model.BoxOverlaps:
        return (-INF, -INF, b.x1, b.y1, b.x2, b.y2, INF, INF)
    if kind is model.BoxContains:
        return (-INF, -INF, b.x2, b.y2, b.x1, b.y1, INF, INF)
    raise TypeError(f"{pred!r} is not a point or box predicate")


def _clean(v: float) -> float:
    return 0.0 if v == 0.0 else float(v)


LOOSE = (model.BoxOverlaps, model.BoxContains)


def _role(pred: model.Predicate) -> str:
    kind = type(pred)
    if kind is model.Wildcard:
        return "wild"
    return "loose" if kind in LOOSE else "tight"


class Shape:
    """A disjunct's field keys by role; ``key`` names the shape (a 128-bit digest)."""

    __slots__ = ("fields", "wild", "loose", "tight", "key")

    def __init__(self, roles: Iterable[tuple[str, str]]) -> None:
        pairs = sorted(roles)
        self.fields = [f for f, _ in pairs]
        self.wild = [f for f, r in pairs if r == "wild"]
        self.loose = [f for f, r in pairs if r == "loose"]
        self.tight = [f for f, r in pairs if r == "tight"]
        digest = hashlib.blake2b(
            json.dumps([self.fields, self.wild, self.loose]).encode(), digest_size=16
        )
        self.key = digest.hexdigest()

    def row(self) -> tuple[str, list[str], list[str], list[str], list[str]]:
        return (self.key, self.fields, self.wild, self.loose, self.tight)


def shape_of(disjunct: model.Disjunct) -> Shape:
    return Shape((field_key(a), _role(p)) for a, p in disjunct.items)


PredicateRow = tuple[Any, ...]


def predicate_row(
    i: int, j: int, shape: str, attribute: model.Attribute, pred: model.Predicate
) -> PredicateRow:
    """The row of one non-wildcard predicate (column order: ``PREDICATE_COLUMNS``)."""
    t = attribute.type
    field = field_key(attribute)
    if type(pred) is model.Interval:
        lo = None if pred.lo is None else value_key(t, pred.lo)
        hi = None if pred.hi is None else value_key(t, pred.hi)
        return (i, j, shape, field, lo, pred.lo_closed, hi, pred.hi_closed, False) + (None,) * 8
    g = tuple(_clean(v) for v in region(pred))
    lo = None if g[0] == -INF else float_key(g[0])
    hi = None if g[4] == INF else float_key(g[4])
    loose = type(pred) in LOOSE
    return (i, j, shape, field, lo, lo is not None, hi, hi is not None, loose) + g


PREDICATE_COLUMNS = (
    "id",
    "dj",
    "shape",
    "field",
    "lo",
    "lo_closed",
    "hi",
    "hi_closed",
    "loose",
    "g0",
    "g1",
    "g2",
    "g3",
    "g4",
    "g5",
    "g6",
    "g7",
)
DISJUNCT_COLUMNS = ("id", "dj", "shape")
SHAPE_COLUMNS = ("shape", "fields", "wild", "loose", "tight")


def encode(item: tuple[int, model.Constraint]) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Every row of one ``(id, constraint)``, tagged ``"d"`` (disjunct), ``"s"`` (shape) or
    ``"p"`` (predicate)."""
    i, constraint = item
    for j, disjunct in enumerate(constraint.disjuncts):
        shape = shape_of(disjunct)
        yield "d", (i, j, shape.key)
        yield "s", shape.row()
        for attribute, pred in disjunct.items:
            if type(pred) is not model.Wildcard:
                yield "p", predicate_row(i, j, shape.key, attribute, pred)
