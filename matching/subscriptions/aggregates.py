"""Aggregates over a window of events: exact (what HAVING compares) and as shown."""

from __future__ import annotations

from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from fractions import Fraction
from typing import Any

from matching import Type

from .events import Event
from .model import Aggregate
from .schema import QUANTITY_ATTRIBUTES

AVG_PLACES = 8

# Sums of decimals are exact whatever their digits.
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


def aggregate_exact(a: Aggregate, window: list[Event]) -> Any:
    """The exact value of an aggregate over a window (what HAVING compares)."""
    values: list[Any] = [e.values[a.attribute] for e in window]
    if a.func == "COUNT":
        return len(values)
    if a.func == "MIN":
        return min(values)
    if a.func == "MAX":
        return max(values)
    total = sum((Fraction(v) for v in values), Fraction(0))
    return total if a.func == "SUM" else total / len(values)


def aggregate_shown(a: Aggregate, window: list[Event]) -> Any:
    """An aggregate as a notification shows it: AVG a decimal string rounded half-even to 8
    places, the others in the attribute's type (decimals as strings, as events carry them)."""
    if a.func == "COUNT":
        return len(window)
    if a.func in ("MIN", "MAX"):
        pick = min if a.func == "MIN" else max
        return pick(window, key=lambda e: e.values[a.attribute]).raw[a.attribute]
    if a.func == "AVG":
        return format_places(aggregate_exact(a, window), AVG_PLACES)
    raws = [e.raw[a.attribute] for e in window]
    # A quantity keeps the market's quantity type: ints stay ints (SPEC 8.1).
    if a.type is Type.INT or (
        a.attribute in QUANTITY_ATTRIBUTES and all(type(r) is int for r in raws)
    ):
        return sum(raws)
    total = Decimal(0)
    for e in window:
        total = _EXACT.add(total, e.values[a.attribute])  # type: ignore[arg-type]
    return format(total, "f")


def format_places(value: Fraction, places: int) -> str:
    """``value`` rounded half-even to ``places`` decimal places, as a decimal string."""
    scaled = round(value * 10**places)  # round() on a Fraction is half-even
    digits = Decimal(abs(scaled)).as_tuple().digits
    return format(Decimal((1 if scaled < 0 else 0, digits, -places)), "f")
