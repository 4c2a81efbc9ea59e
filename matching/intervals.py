"""Intervals of ordered types: the canonical form, intersection and complement.

Canonical form (the invariants of ``model.Interval``):

* on int and date (discrete) an open bound becomes the closed bound next to it,
  so on int ``(3, 5)`` is ``[4, 4]``;
* a bound at the edge of its domain becomes unbounded: the int8 limits on int,
  0001-01-01 and 9999-12-31 on date, and ``''`` as a closed lower bound on string
  (no string is smaller), so ``int x >= -9223372036854775808`` is the wildcard;
* an interval with no bound at all is the ``Wildcard``; an empty one is ``None``.

decimal, float and timestamp are treated as dense (unbounded reals and instants):
their bounds keep their open/closed flags, as PostgreSQL ranges without a
canonical function do.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from .model import Interval, Type, Wildcard
from .values import INT8_MAX, INT8_MIN

WILDCARD = Wildcard()
_DAY = dt.timedelta(days=1)

OrderedPredicate = Interval | Wildcard


def make(t: Type, lo: Any, lo_closed: bool, hi: Any, hi_closed: bool) -> OrderedPredicate | None:
    """The canonical predicate for this interval of type ``t``; ``None`` if it is empty.

    ``lo`` and ``hi`` are values of type ``t`` (``None``: unbounded).
    """
    if t is Type.INT:
        if lo is not None:
            if not lo_closed:
                lo = lo + 1
                lo_closed = True
            if lo > INT8_MAX:
                return None
            if lo <= INT8_MIN:
                lo, lo_closed = None, False
        if hi is not None:
            if not hi_closed:
                hi = hi - 1
                hi_closed = True
            if hi < INT8_MIN:
                return None
            if hi >= INT8_MAX:
                hi, hi_closed = None, False
    elif t is Type.DATE:
        if lo is not None:
            if not lo_closed:
                if lo == dt.date.max:
                    return None
                lo = lo + _DAY
                lo_closed = True
            if lo == dt.date.min:
                lo, lo_closed = None, False
        if hi is not None:
            if not hi_closed:
                if hi == dt.date.min:
                    return None
                hi = hi - _DAY
                hi_closed = True
            if hi == dt.date.max:
                hi, hi_closed = None, False
    elif t is Type.STRING:
        if lo == "" and lo_closed:
            lo, lo_closed = None, False
        if hi == "" and not hi_closed:
            return None
    if lo is None:
        if hi is None:
            return WILDCARD
    elif hi is not None and (lo > hi or (lo == hi and not (lo_closed and hi_closed))):
        return None
    return Interval(lo, lo_closed, hi, hi_closed)


def intersect(p: OrderedPredicate, q: OrderedPredicate) -> OrderedPredicate | None:
    """The intersection of two canonical predicates of one type; ``None`` if empty.

    Canonical inputs give a canonical result: the bounds are taken from the inputs.
    """
    if type(p) is Wildcard:
        return q
    if type(q) is Wildcard:
        return p
    a: Any = p
    b: Any = q
    if a.lo is None:
        lo, lo_closed = b.lo, b.lo_closed
    elif b.lo is None or a.lo > b.lo:
        lo, lo_closed = a.lo, a.lo_closed
    elif b.lo > a.lo:
        lo, lo_closed = b.lo, b.lo_closed
    else:
        lo, lo_closed = a.lo, a.lo_closed and b.lo_closed
    if a.hi is None:
        hi, hi_closed = b.hi, b.hi_closed
    elif b.hi is None or a.hi < b.hi:
        hi, hi_closed = a.hi, a.hi_closed
    elif b.hi < a.hi:
        hi, hi_closed = b.hi, b.hi_closed
    else:
        hi, hi_closed = a.hi, a.hi_closed and b.hi_closed
    if (
        lo is not None
        and hi is not None
        and (lo > hi or (lo == hi and not (lo_closed and hi_closed)))
    ):
        return None
    if lo == a.lo and lo_closed == a.lo_closed and hi == a.hi and hi_closed == a.hi_closed:
        return p
    return Interval(lo, lo_closed, hi, hi_closed)


def overlaps(p: OrderedPredicate, q: OrderedPredicate) -> bool:
    """Whether two canonical predicates share a value: PostgreSQL's ``&&`` on ranges."""
    if type(p) is Wildcard or type(q) is Wildcard:
        return True
    a: Any = p
    b: Any = q
    # a starts after b ends, or b starts after a ends?
    if (
        a.lo is not None
        and b.hi is not None
        and (a.lo > b.hi or (a.lo == b.hi and not (a.lo_closed and b.hi_closed)))
    ):
        return False
    return (
        b.lo is None
        or a.hi is None
        or b.lo < a.hi
        or (b.lo == a.hi and a.hi_closed and b.lo_closed)
    )


def complement(t: Type, p: Interval) -> list[OrderedPredicate]:
    """The complement of a canonical interval: the part below it and the part above it."""
    parts: list[OrderedPredicate] = []
    if p.lo is not None:
        below = make(t, None, False, p.lo, not p.lo_closed)
        if below is not None:
            parts.append(below)
    if p.hi is not None:
        above = make(t, p.hi, not p.hi_closed, None, False)
        if above is not None:
            parts.append(above)
    return parts
