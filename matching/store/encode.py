"""How predicates are written into the store: operator names, value texts, field keys.

Both strategies read the same normalized ``Constraint`` (the invariants of
``matching.model``); this module holds what they share:

* ``interval_op`` names an ordered predicate by the operator the paper stores
  (``=``, ``<``, ``<=``, ``>``, ``>=`` and the four range operators);
* ``range_text`` writes an interval as a PostgreSQL range literal, every bound
  double-quoted so that no string, however odd, changes the literal's structure;
* ``box_text`` and ``point_text`` write geometric operands with ``repr`` of the
  floats, which PostgreSQL reads back to the same double;
* ``check_storable`` rejects what an index entry could not hold (see ``LIMITS``);
* ``value_key`` writes a single value so that equal values (as the semantics compare
  them: ``1.0`` and ``1.00``, ``0.0`` and ``-0.0``) get the same text, which the
  ``range`` strategy's whole-disjunct keys are made of.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from matching import model

from .base import StoreLimitError

# The order in which type tables are created, matched and reported.
TYPES: tuple[model.Type, ...] = (
    model.Type.INT,
    model.Type.DECIMAL,
    model.Type.FLOAT,
    model.Type.DATE,
    model.Type.TIMESTAMP,
    model.Type.STRING,
    model.Type.POINT,
    model.Type.BOX,
)

WILDCARD_OP = "*"

# The PostgreSQL type holding a single value of each ordered type.
SCALAR_SQL_TYPES: dict[model.Type, str] = {
    model.Type.INT: "int8",
    model.Type.DECIMAL: "numeric",
    model.Type.FLOAT: "float8",
    model.Type.DATE: "date",
    model.Type.TIMESTAMP: "timestamptz",
    model.Type.STRING: 'text COLLATE "C"',
}

# Operators of point and box predicates, as stored in the ``op`` column.
GEOMETRIC_OPS: dict[type, str] = {
    model.PointEq: "=",
    model.PointWithin: "within",
    model.BoxEq: "=",
    model.BoxOverlaps: "overlaps",
    model.BoxContains: "contains",
    model.BoxWithin: "within",
}

# A B-tree entry must fit in about a third of an 8 kB page (2,704 bytes) and a GiST
# entry in one page; an entry holds a field name and up to two values. Within these
# limits every entry fits, whatever the strategy; beyond them the store refuses the
# constraint before writing anything, rather than failing inside PostgreSQL.
MAX_FIELD_BYTES = 255
MAX_STRING_BYTES = 1000
MAX_DECIMAL_DIGITS = 1000
LIMITS = (
    f"attribute names of at most {MAX_FIELD_BYTES} bytes (UTF-8), strings of at most "
    f"{MAX_STRING_BYTES} bytes and decimals of at most {MAX_DECIMAL_DIGITS} significant digits"
)


def field_key(attribute: model.Attribute) -> str:
    """The type-qualified name (``int:lot``) that tells apart ``int x`` and ``float x``.

    Unambiguous although names may contain ``:``: the type never does, so the key
    splits at its first colon.
    """
    return f"{attribute.type.value}:{attribute.name}"


def interval_op(iv: model.Interval) -> str:
    """The paper's operator for a normalized interval (never empty, never unbounded twice)."""
    if iv.lo is None:
        return "<=" if iv.hi_closed else "<"
    if iv.hi is None:
        return ">=" if iv.lo_closed else ">"
    if iv.lo == iv.hi:
        return "="
    return ("[" if iv.lo_closed else "(") + ("]" if iv.hi_closed else ")")


def operator(pred: model.Predicate) -> str:
    """The stored operator of any predicate."""
    kind = type(pred)
    if kind is model.Interval:
        return interval_op(pred)  # type: ignore[arg-type]  # kind is type(pred): mypy does not narrow through it
    if kind is model.Wildcard:
        return WILDCARD_OP
    return GEOMETRIC_OPS[kind]


def value_text(t: model.Type, value: model.Value) -> str:
    """A value of an ordered type as PostgreSQL's input function for that type reads it."""
    if t is model.Type.INT or t is model.Type.STRING:
        return str(value)
    if t is model.Type.DECIMAL:
        return str(value)  # scientific notation (1E+3) is valid numeric input
    if t is model.Type.FLOAT:
        return repr(float(value))  # type: ignore[arg-type]  # a FLOAT value is a number
    if t is model.Type.DATE or t is model.Type.TIMESTAMP:
        assert isinstance(value, dt.date)
        return value.isoformat()
    raise TypeError(f"{t} has no interval values")


def value_key(t: model.Type, value: model.Value) -> str:
    """One text per value of an ordered type: equal values give equal texts, and only they.

    Unlike ``value_text`` it does not keep how a value was written: decimals lose
    trailing zeros (``1.00`` and ``1.0`` are one value), ``-0.0`` is ``0.0``, and a
    timestamp is written in UTC.
    """
    if t is model.Type.DECIMAL:
        assert isinstance(value, Decimal)
        sign, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)  # the language has no NaN or infinity
        end = len(digits)
        while end and digits[end - 1] == 0:
            end -= 1
            exponent += 1
        if not end:
            return "0"
        # No Decimal context is involved, so no digit is ever rounded away.
        return ("-" if sign else "") + "".join(map(str, digits[:end])) + f"e{exponent}"
    if t is model.Type.FLOAT:
        number = float(value)  # type: ignore[arg-type]  # as above
        return repr(number) if number else "0.0"
    if t is model.Type.TIMESTAMP:
        assert isinstance(value, dt.datetime)
        return value.astimezone(dt.UTC).isoformat()
    return value_text(t, value)


def _quote_bound(text: str) -> str:
    # Range input syntax: inside double quotes a backslash escapes the next character.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def range_text(t: model.Type, iv: model.Interval) -> str:
    """The interval as a range literal: ``["1","5"]``, ``(,"x")``.

    Discrete bounds are written closed and PostgreSQL canonicalizes them
    (``[1,5]`` becomes ``[1,6)``); the normalizer never leaves a closed bound at the
    int8 or date edge, where that step would overflow.
    """
    lo = "" if iv.lo is None else _quote_bound(value_text(t, iv.lo))
    hi = "" if iv.hi is None else _quote_bound(value_text(t, iv.hi))
    return ("[" if iv.lo_closed else "(") + lo + "," + hi + ("]" if iv.hi_closed else ")")


def point_text(p: model.Point) -> str:
    return f"({p.x!r},{p.y!r})"


def box_text(b: model.Box) -> str:
    return f"({b.x1!r},{b.y1!r}),({b.x2!r},{b.y2!r})"


def check_storable(constraint: model.Constraint) -> None:
    """Raise ``StoreLimitError`` if some field or value would not fit in an index entry."""
    for disjunct in constraint.disjuncts:
        for attribute, pred in disjunct.items:
            if len(attribute.name.encode()) > MAX_FIELD_BYTES:
                raise StoreLimitError(
                    f"the attribute name {attribute.name[:40]!r}... is longer than "
                    f"{MAX_FIELD_BYTES} bytes, more than the constraint store holds"
                )
            if type(pred) is model.Interval and attribute.type in (
                model.Type.STRING,
                model.Type.DECIMAL,
            ):
                for value in (pred.lo, pred.hi):
                    if value is not None:
                        _check_value(attribute, value)


def _check_value(attribute: model.Attribute, value: model.Value) -> None:
    if isinstance(value, str):
        if len(value.encode()) > MAX_STRING_BYTES:
            raise StoreLimitError(
                f"a string compared with {attribute.name} is longer than "
                f"{MAX_STRING_BYTES} bytes, more than the constraint store holds"
            )
    elif isinstance(value, Decimal) and len(value.as_tuple().digits) > MAX_DECIMAL_DIGITS:
        raise StoreLimitError(
            f"a decimal compared with {attribute.name} has more than {MAX_DECIMAL_DIGITS} "
            "significant digits, more than the constraint store holds"
        )
