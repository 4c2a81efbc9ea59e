"""The posting form, generated from a market's schema (SPEC 6.1).

Each attribute becomes inputs by its type: a minimum and a maximum for numbers, dates and
timestamps, a value for strings, a point or an area for points, a box and how it relates for
boxes. An offer's price comes in tiers by quantity ("1,000 to 10,000 at 1.00; 5,000 to
10,000 at 0.90"): each tier is one disjunct, so the posted constraint is an OR of the tiers,
each an AND of the shared attributes, the tier's quantity range and its price. A bid states
the highest price it accepts.

The form only writes constraint text; the market's rules (required attributes, the tick,
price bounds) are applied by the services, whose errors the page shows with their position.
An advanced box takes the constraint language directly and wins over the form when filled.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from exchange.http import whole_number
from exchange.market_rules import MarketSchema, SchemaAttribute, Side
from exchange.models import Market
from matching.model import Type

MAX_TIERS = 20
INT_RE = re.compile(r"-?[0-9]{1,18}\Z")
DECIMAL_RE = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,20})?\Z")
FLOAT_RE = re.compile(r"-?[0-9]{1,30}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?\Z")
DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
DATETIME_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?\Z")
POINT_MODES = [("", "any location"), ("at", "at a point"), ("within", "within an area")]
BOX_MODES = [
    ("", "any area"),
    ("eq", "exactly this box"),
    ("within", "inside this box"),
    ("overlaps", "overlapping this box"),
    ("contains", "containing this box"),
]
BOX_OPERATORS = {"within": "WITHIN", "overlaps": "OVERLAPS", "contains": "CONTAINS"}
NUMBER_HINT = {
    Type.INT: "a whole number, such as 1000",
    Type.DECIMAL: "a number such as 1.25",
    Type.FLOAT: "a number such as 1.5 or 2e3",
}


@dataclass
class Input:
    """One HTML input: ``name`` is the form field, ``label`` its visible label."""

    name: str
    label: str
    type: str = "text"
    value: str = ""
    step: str | None = None
    inputmode: str | None = None
    choices: list[tuple[str, str]] | None = None
    error: str | None = None
    context: str = ""  # read before the label by screen readers only: "Lot size" from


@dataclass
class AttributeField:
    attribute: SchemaAttribute
    kind: str  # range | value | point | box
    required: bool
    inputs: list[Input] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [i.error for i in self.inputs if i.error]


@dataclass
class Tier:
    index: int
    inputs: list[Input]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _number_input(attribute: SchemaAttribute, name: str, label: str, value: str) -> Input:
    mode = "numeric" if attribute.type is Type.INT else "decimal"
    return Input(name, label, "text", value, inputmode=mode)


def _range_inputs(attribute: SchemaAttribute, data: QueryDict, prefix: str) -> list[Input]:
    lo, hi = f"{prefix}__min", f"{prefix}__max"
    t = attribute.type
    if t is Type.DATE:
        inputs = [
            Input(lo, "from", "date", data.get(lo, "")),
            Input(hi, "to", "date", data.get(hi, "")),
        ]
    elif t is Type.TIMESTAMP:
        inputs = [
            Input(lo, "from (UTC)", "datetime-local", data.get(lo, "")),
            Input(hi, "to (UTC)", "datetime-local", data.get(hi, "")),
        ]
    else:
        inputs = [
            _number_input(attribute, lo, "from", data.get(lo, "")),
            _number_input(attribute, hi, "to", data.get(hi, "")),
        ]
    for item in inputs:
        item.context = attribute.label
    return inputs


class PostingForm:
    """The generated form for one side of one market, bound to submitted data or empty."""

    def __init__(self, *, market: Market, schema: MarketSchema, side: Side, data: Any = None):
        self.market, self.schema, self.side = market, schema, side
        self.bound = data is not None
        self.data: QueryDict = data if data is not None else QueryDict()
        self.price = schema.price
        quantity = schema.by_role("quantity")
        # Offers price by quantity tiers; a market without a quantity attribute has one price.
        self.tiered = side == "offer" and quantity is not None
        self.quantity = quantity if self.tiered else None
        self.fields = [
            self._field(a)
            for a in schema.attributes
            if a.role != "price" and a is not self.quantity
        ]
        self.price_mode = Input(
            "price_mode",
            "Pricing",
            "select",
            self.data.get("price_mode", "fixed"),
            choices=[
                ("fixed", "fixed price (first come, first served)"),
                ("reserve", "auction with a reserve (lowest price)"),
            ],
        )
        count = whole_number(str(self.data.get("tiers", "1"))) or 1
        if self.data.get("add_tier"):
            count += 1
        self.tiers = [self._tier(i) for i in range(max(1, min(count, MAX_TIERS)))]
        self.price_input = Input(
            "price",
            "Highest price you pay" if side == "bid" else "Price",
            "text",
            self.data.get("price", ""),
            inputmode="decimal",
            context=self.price.label,
        )
        self.closes_at = Input(
            "closes_at",
            "Closes at (UTC, optional)",
            "datetime-local",
            self.data.get("closes_at", ""),
        )
        self.constraint = Input(
            "constraint", "Constraint", "textarea", self.data.get("constraint", "")
        )
        self.error: str | None = None  # what the services refused, for the whole form
        self.error_code: str | None = None  # its code (over_limit, ...), for scripts and tests
        self.error_position: int | None = None
        self.error_text: str | None = None  # the text the error position points into

    # -- shape ------------------------------------------------------------------------

    @property
    def prefix(self) -> str:
        return self.side

    def _required(self, attribute: SchemaAttribute) -> bool:
        return attribute.required_on_offer if self.side == "offer" else attribute.required_on_bid

    def _field(self, attribute: SchemaAttribute) -> AttributeField:
        name, data, t = attribute.name, self.data, attribute.type
        required = self._required(attribute)
        if t in (Type.INT, Type.DECIMAL, Type.FLOAT, Type.DATE, Type.TIMESTAMP):
            return AttributeField(
                attribute, "range", required, _range_inputs(attribute, data, name)
            )
        label = attribute.label
        if t is Type.STRING:
            value = Input(f"{name}__eq", "is", "text", data.get(f"{name}__eq", ""), context=label)
            return AttributeField(attribute, "value", required, [value])
        if t is Type.POINT:
            mode = Input(f"{name}__mode", "where", "select", data.get(f"{name}__mode", ""))
            mode.choices, coords = POINT_MODES, ["x", "y", "x1", "y1", "x2", "y2"]
        else:
            mode = Input(f"{name}__mode", "relation", "select", data.get(f"{name}__mode", ""))
            mode.choices, coords = BOX_MODES, ["x1", "y1", "x2", "y2"]
        mode.context = label
        inputs = [mode] + [
            Input(
                f"{name}__{c}",
                c,
                "text",
                data.get(f"{name}__{c}", ""),
                inputmode="decimal",
                context=label,
            )
            for c in coords
        ]
        return AttributeField(attribute, "point" if t is Type.POINT else "box", required, inputs)

    def _tier(self, index: int) -> Tier:
        p, data, context = f"tier-{index}-", self.data, f"Tier {index + 1}"
        inputs = []
        if self.quantity is not None:
            for suffix, label in (("qmin", "from"), ("qmax", "to")):
                item = _number_input(self.quantity, p + suffix, label, data.get(p + suffix, ""))
                item.context = f"{context} {self.quantity.label.lower()}"
                inputs.append(item)
        price = Input(p + "price", "price", "text", data.get(p + "price", ""), inputmode="decimal")
        price.context = context
        inputs.append(price)
        return Tier(index, inputs)

    # -- building the constraint text --------------------------------------------------

    @property
    def advanced(self) -> bool:
        return bool(self.constraint.value.strip())

    def source(self) -> str | None:
        """The constraint to post: the advanced text when given, else the form's text
        (None when an input is malformed; the inputs then carry their errors)."""
        if self.advanced:
            return self.constraint.value
        return self.form_text()

    def form_text(self) -> str | None:
        """The constraint text the form fields describe, or None after marking errors."""
        common = [p for f in self.fields for p in self._predicates(f)]
        price = self.price.name
        disjuncts: list[list[str]] = []
        if self.side == "bid":
            value = self._number(self.price_input, self.price)
            disjuncts.append([*common, *([f"{price} <= {value}"] if value else [])])
        elif not self.tiered:
            value = self._number(self.price_input, self.price)
            op = ">=" if self.price_mode.value == "reserve" else "="
            disjuncts.append([*common, *([f"{price} {op} {value}"] if value else [])])
        else:
            op = ">=" if self.price_mode.value == "reserve" else "="
            assert self.quantity is not None
            for tier in self.tiers:
                if not any(i.value.strip() for i in tier.inputs):
                    continue  # an empty tier row
                qmin, qmax, tier_price = tier.inputs
                preds = [*common, *self._range(self.quantity.name, qmin, qmax, self.quantity)]
                value = self._number(tier_price, self.price)
                if value:
                    preds.append(f"{price} {op} {value}")
                disjuncts.append(preds)
            if not disjuncts:
                disjuncts.append(common)  # the services say what is missing
        if self.has_errors:
            return None
        disjuncts = [d for d in disjuncts if d]
        if not disjuncts:
            self.error = "Fill in the form, or write the constraint in the advanced box."
            return None
        if len(disjuncts) == 1:
            return " AND ".join(disjuncts[0])
        return " OR ".join(f"({' AND '.join(d)})" for d in disjuncts)

    @property
    def inputs(self) -> list[Input]:
        out = [i for f in self.fields for i in f.inputs]
        out += [i for t in self.tiers for i in t.inputs]
        return [*out, self.price_input, self.closes_at]

    @property
    def has_errors(self) -> bool:
        return any(i.error for i in self.inputs)

    def _number(self, item: Input, attribute: SchemaAttribute) -> str | None:
        value = item.value.strip()
        if not value:
            return None
        pattern = {Type.INT: INT_RE, Type.DECIMAL: DECIMAL_RE}.get(attribute.type, FLOAT_RE)
        if not pattern.match(value):
            item.error = f"Enter {NUMBER_HINT.get(attribute.type, 'a number')}."
            return None
        return value

    def _literal(self, item: Input, attribute: SchemaAttribute) -> str | None:
        value = item.value.strip()
        if not value:
            return None
        if attribute.type is Type.DATE:
            if not DATE_RE.match(value):
                item.error = "Enter a date such as 2026-12-01."
                return None
            return f"DATE '{value}'"
        if attribute.type is Type.TIMESTAMP:
            if not DATETIME_RE.match(value):
                item.error = "Enter a date and time such as 2026-12-01T09:30."
                return None
            return f"TIMESTAMP '{value if value.count(':') == 2 else value + ':00'}Z'"
        return self._number(item, attribute)

    def _range(
        self, name: str, lo_input: Input, hi_input: Input, attribute: SchemaAttribute
    ) -> list[str]:
        lo, hi = self._literal(lo_input, attribute), self._literal(hi_input, attribute)
        if lo and hi:
            return [f"{name} = {lo}" if lo == hi else f"{name} BETWEEN {lo} AND {hi}"]
        if lo:
            return [f"{name} >= {lo}"]
        if hi:
            return [f"{name} <= {hi}"]
        return []

    def _coords(self, inputs: list[Input]) -> str | None:
        values = []
        for item in inputs:
            value = item.value.strip()
            if not FLOAT_RE.match(value):
                item.error = "Enter a number." if value else "Enter this coordinate."
                return None
            values.append(value)
        return ", ".join(values)

    def _predicates(self, f: AttributeField) -> list[str]:
        name = f.attribute.name
        if f.kind == "range":
            return self._range(name, f.inputs[0], f.inputs[1], f.attribute)
        if f.kind == "value":
            value = f.inputs[0].value
            return [f"{name} = {_quote(value)}"] if value.strip() else []
        mode, *coords = f.inputs
        by_name = {i.name.rsplit("__", 1)[1]: i for i in coords}
        box = [by_name[c] for c in ("x1", "y1", "x2", "y2")]
        if f.kind == "point":
            if mode.value == "at":
                xy = self._coords([by_name["x"], by_name["y"]])
                return [f"{name} = POINT({xy})"] if xy else []
            if mode.value == "within":
                corners = self._coords(box)
                return [f"point {name} WITHIN BOX({corners})"] if corners else []
            return []
        if mode.value in ("eq", *BOX_OPERATORS):
            corners = self._coords(box)
            if not corners:
                return []
            op = BOX_OPERATORS.get(mode.value, "=")
            return [f"{name} {op} BOX({corners})"]
        return []

    def closes_at_value(self) -> dt.datetime | None:
        """The optional closing time (entered in UTC), or None after marking an error."""
        value = self.closes_at.value.strip()
        if self.side != "offer" or not value:
            return None
        if not DATETIME_RE.match(value):
            self.closes_at.error = "Enter a date and time such as 2026-12-01T09:30."
            return None
        try:
            return dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC)
        except ValueError:
            self.closes_at.error = "Enter a real date and time."
            return None
