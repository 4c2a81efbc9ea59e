"""Aggregates over a window of events: exact (what HAVING compares) and as shown."""

from __future__ import annotations

from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from fractions import Fraction
from typing import Any

from matching import Type
from matching.subscriptions.events import Event
from matching.subscriptions.language.model import Aggregate, Having
from matching.subscriptions.language.schema import QUANTITY_ATTRIBUTES

from .predicates import COMPARE

AVG_PLACES = 8

# Sums of decimals are exact whatever their digits.
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


def exact_sum(attribute: str, window: list[Event]) -> Any:
    """The exact sum of an int or decimal attribute over a window."""
    total: Any = 0
    for e in window:
        value: Any = e.values[attribute]
        total = _EXACT.add(total, value)
    return total


def having_holds(h: Having, window: list[Event]) -> bool:
    """Whether ``HAVING agg op value`` holds on the exact aggregate over a full window.

    ``AVG(x, n) op v`` is decided as ``SUM(x) op v * n`` in exact decimal arithmetic, which
    is the same comparison (n > 0) without ever dividing.
    """
    a = h.aggregate
    compare = COMPARE[h.op]
    if a.func == "COUNT":
        return compare(len(window), h.value)
    if a.func in ("MIN", "MAX"):
        pick = min if a.func == "MIN" else max
        return compare(pick(e.values[a.attribute] for e in window), h.value)
    total = exact_sum(a.attribute, window)
    if a.func == "SUM":
        return compare(total, h.value)
    return compare(total, _EXACT.multiply(h.value, len(window)))  # type: ignore[arg-type]  # an AVG threshold is a number


def aggregate_shown(a: Aggregate, window: list[Event]) -> Any:
    """An aggregate as a notification shows it: AVG a decimal string rounded half-even to 8
    places, the others in the attribute's type (decimals as strings, as events carry them)."""
    if a.func == "COUNT":
        return len(window)
    if a.func in ("MIN", "MAX"):
        pick = min if a.func == "MIN" else max
        return pick(window, key=lambda e: e.values[a.attribute]).raw[a.attribute]
    if a.func == "AVG":
        return format_places(Fraction(exact_sum(a.attribute, window)) / len(window), AVG_PLACES)
    raws = [e.raw[a.attribute] for e in window]
    # A quantity keeps the market's quantity type: ints stay ints (SPEC 8.1).
    if a.type is Type.INT or (
        a.attribute in QUANTITY_ATTRIBUTES and all(type(r) is int for r in raws)
    ):
        return sum(raws)
    return format(exact_sum(a.attribute, window), "f")


def format_places(value: Fraction, places: int) -> str:
    """``value`` rounded half-even to ``places`` decimal places, as a decimal string."""
    scaled = round(value * 10**places)  # round() on a Fraction is half-even
    digits = Decimal(abs(scaled)).as_tuple().digits
    return format(Decimal((1 if scaled < 0 else 0, digits, -places)), "f")
