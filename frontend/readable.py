"""Constraints as people read them: one row per tier (disjunct), one column per attribute.

``lot BETWEEN 1000 AND 10000 AND price = 1.00`` reads as "Lot size 1,000 – 10,000 pencils",
"Price per pencil 1.00 EUR". The canonical text stays next to it on the pages; this is only
its presentation.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import matching
from exchange.market_rules import MarketSchema, SchemaAttribute
from exchange.numbers import grouped_text, price_text
from matching import model


@dataclass(frozen=True)
class Cell:
    attribute: SchemaAttribute
    text: str  # "" when the tier says nothing about the attribute


@dataclass(frozen=True)
class Readable:
    columns: list[SchemaAttribute]
    rows: list[list[Cell]]

    @property
    def lines(self) -> list[str]:
        """Each tier on one line: "Lot size 1,000 – 10,000 pencils · Price 1.00 EUR" (what a
        tier leaves open, "any", is left out)."""
        return [
            " · ".join(f"{c.attribute.label} {c.text}" for c in row if c.text not in ("", "any"))
            or "anything"
            for row in self.rows
        ]


def readable(constraint: matching.Constraint, *, schema: MarketSchema, tick: Decimal) -> Readable:
    present = {attr for d in constraint for attr, _ in d}
    columns = [a for a in schema.attributes if a.attribute in present]
    rows = []
    for disjunct in constraint:
        mapping = disjunct.mapping
        rows.append(
            [
                Cell(a, "" if a.attribute not in mapping else _text(mapping[a.attribute], a, tick))
                for a in columns
            ]
        )
    return Readable(columns=columns, rows=rows)


def _value(value: Any, attribute: SchemaAttribute, tick: Decimal) -> str:
    if attribute.role == "price":
        return price_text(Decimal(value), tick) or ""
    if attribute.type in (model.Type.INT, model.Type.DECIMAL):
        return grouped_text(value)
    if attribute.type is model.Type.FLOAT:
        return f"{float(value):,g}"
    if attribute.type is model.Type.TIMESTAMP and isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _unit(text: str, attribute: SchemaAttribute) -> str:
    return f"{text} {attribute.unit}" if attribute.unit and text != "any" else text


def _coords(*numbers: float) -> str:
    return ", ".join(f"{n:g}" for n in numbers)


def _box(box: model.Box) -> str:
    return f"({_coords(box.x1, box.y1)}) – ({_coords(box.x2, box.y2)})"


def _text(predicate: Any, attribute: SchemaAttribute, tick: Decimal) -> str:
    if isinstance(predicate, model.Wildcard):
        return "any"
    if isinstance(predicate, model.Interval):
        lo = None if predicate.lo is None else _value(predicate.lo, attribute, tick)
        hi = None if predicate.hi is None else _value(predicate.hi, attribute, tick)
        if lo is not None and hi is not None:
            if predicate.lo == predicate.hi:
                text = lo
            elif predicate.lo_closed and predicate.hi_closed:
                text = f"{lo} – {hi}"
            else:
                text = (
                    f"{'≥' if predicate.lo_closed else '>'} {lo} and "
                    f"{'≤' if predicate.hi_closed else '<'} {hi}"
                )
        elif lo is not None:
            text = f"{'≥' if predicate.lo_closed else '>'} {lo}"
        elif hi is not None:
            text = f"{'≤' if predicate.hi_closed else '<'} {hi}"
        else:
            text = "any"
        return _unit(text, attribute)
    if isinstance(predicate, model.PointEq):
        return f"at ({_coords(predicate.point.x, predicate.point.y)})"
    if isinstance(predicate, model.PointWithin):
        return f"within {_box(predicate.box)}"
    if isinstance(predicate, model.BoxEq):
        return _box(predicate.box)
    if isinstance(predicate, model.BoxWithin):
        return f"within {_box(predicate.box)}"
    if isinstance(predicate, model.BoxOverlaps):
        return f"overlapping {_box(predicate.box)}"
    if isinstance(predicate, model.BoxContains):
        return f"containing {_box(predicate.box)}"
    return str(predicate)
