"""The posting form, generated from a market's schema (SPEC 6.1).

Each attribute becomes inputs by its type: a minimum and a maximum for numbers, dates and
timestamps, a value for strings, a point or an area for points, a box and how it relates for
boxes. An offer's price comes in tiers by quantity ("1,000 to 10,000 at 1.00; 5,000 to
10,000 at 0.90"): each tier is one disjunct, so the posted constraint is an OR of the tiers,
each an AND of the shared attributes, the tier's quantity range and its price. A bid states
the highest price it accepts.

``PostingForm`` is a ``django.forms.Form`` whose fields are made from the schema. Each input
that stands for a literal (a number, a date, a time, a string, a coordinate) is checked and
written by the constraint language's own rules (``matching.values``: its bounds, int8's
range, real days and times, its quoting), so the form accepts exactly the literals the
language does. The form only writes constraint text; the market's rules (required
attributes, the tick, price bounds) are applied by the services, whose errors the page
shows with their position. An advanced box takes the constraint language directly and wins
over the form when filled.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django import forms

from exchange.http import whole_number
from exchange.market_rules import MarketSchema, SchemaAttribute, Side
from exchange.models import Market
from matching import ConstraintError
from matching.model import Type
from matching.values import EXAMPLES, bare_coordinate, bare_value, format_value, quote_string

MAX_TIERS = 20
POINT_MODES = [("", "any location"), ("at", "at a point"), ("within", "within an area")]
BOX_MODES = [
    ("", "any area"),
    ("eq", "exactly this box"),
    ("within", "inside this box"),
    ("overlaps", "overlapping this box"),
    ("contains", "containing this box"),
]
BOX_OPERATORS = {"within": "WITHIN", "overlaps": "OVERLAPS", "contains": "CONTAINS"}
# What to enter, for the inputs whose spelling is not the language's: a date or a time is
# typed without its keyword and quotes, a time in UTC and maybe without its seconds (as a
# datetime-local input gives it).
DATE_HINT = "Enter a date such as 2026-12-01."
TIME_HINT = "Enter a date and time such as 2026-12-01T09:30."
NOTHING = "Fill in the form, or write the constraint in the advanced box."


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


def _sentence(message: str) -> str:
    return message[0].upper() + message[1:] + "."


def _timestamp(text: str) -> dt.datetime:
    """The UTC instant of a time typed as a datetime-local input gives it (``2026-12-01T09:30``,
    seconds optional), by the language's rule for a timestamp's body."""
    body = text + ":00" if text.count(":") == 1 else text
    value = bare_value(Type.TIMESTAMP, body + "Z", "the time")
    assert isinstance(value, dt.datetime)
    return value


class LiteralField(forms.Field):
    """An input standing for one literal of ``attribute``'s type, cleaned to that literal's
    text in the constraint language (None when left empty). Numbers keep the digits they
    were typed with; dates and times are written as the language writes them; strings are
    quoted as it quotes them."""

    def __init__(self, attribute: SchemaAttribute) -> None:
        super().__init__(required=False)
        self.attribute = attribute

    def clean(self, value: Any) -> str | None:
        t = self.attribute.type
        text = "" if value is None else str(value)
        if t is not Type.STRING:
            text = text.strip()  # a string's spaces are its own
        if not text.strip():
            return None
        try:
            if t is Type.TIMESTAMP:
                return format_value(t, _timestamp(text))
            typed = bare_value(t, text, self.attribute.name)
        except ConstraintError as exc:
            raise forms.ValidationError(self._message(exc)) from None
        if t is Type.STRING:
            return quote_string(text)
        return text if t in (Type.INT, Type.DECIMAL, Type.FLOAT) else format_value(t, typed)

    def _message(self, exc: ConstraintError) -> str:
        t = self.attribute.type
        if t is Type.DATE:
            return DATE_HINT
        if t is Type.TIMESTAMP:
            return TIME_HINT
        if t is not Type.STRING and exc.code in ("syntax", "type_mismatch"):
            return f"Enter {EXAMPLES[t]}."
        return _sentence(exc.message)  # past the language's bounds: it says which


class TimeField(forms.Field):
    """An optional time typed in UTC (``2026-12-01T09:30``), cleaned to its instant."""

    def __init__(self) -> None:
        super().__init__(required=False)

    def clean(self, value: Any) -> dt.datetime | None:
        text = "" if value is None else str(value).strip()
        if not text:
            return None
        try:
            return _timestamp(text)
        except ConstraintError:
            raise forms.ValidationError(TIME_HINT) from None


def _number_input(attribute: SchemaAttribute, name: str, label: str, value: str) -> Input:
    mode = "numeric" if attribute.type is Type.INT else "decimal"
    return Input(name, label, "text", value, inputmode=mode)


def _range_inputs(attribute: SchemaAttribute, data: Mapping[str, Any], prefix: str) -> list[Input]:
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


class PostingForm(forms.Form):
    """The generated form for one side of one market, bound to submitted data or empty.

    Its Django fields are the inputs that the posted text reads (an attribute's range or
    value, the tiers or the price, the closing time of an offer); each ``Input`` is how one
    of them is drawn (``_input.html``), with the field's first error once it is checked.
    Coordinates are checked in ``clean``, only where their attribute's mode uses them.
    A template reads ``form.x`` as the bound field ``form["x"]`` first, so no attribute is
    named as a field is (hence ``price_attribute`` and ``closes_at_input``).
    """

    def __init__(self, *, market: Market, schema: MarketSchema, side: Side, data: Any = None):
        super().__init__(data=data)
        self.market, self.schema, self.side = market, schema, side
        self.price_attribute = schema.price
        quantity = schema.by_role("quantity")
        # Offers price by quantity tiers; a market without a quantity attribute has one price.
        self.tiered = side == "offer" and quantity is not None
        self.quantity = quantity if self.tiered else None
        self.attribute_fields = [
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
            context=self.price_attribute.label,
        )
        if not self.tiered:
            self.fields["price"] = LiteralField(self.price_attribute)
        self.closes_at_input = Input(
            "closes_at",
            "Closes at (UTC, optional)",
            "datetime-local",
            self.data.get("closes_at", ""),
        )
        if side == "offer":
            self.fields["closes_at"] = TimeField()
        self.constraint = Input(
            "constraint", "Constraint", "textarea", self.data.get("constraint", "")
        )
        self.error: str | None = None  # what the services refused, for the whole form
        self.error_code: str | None = None  # its code (over_limit, ...), for scripts and tests
        self.error_position: int | None = None
        self.error_text: str | None = None  # the text the error position points into

    # -- shape ------------------------------------------------------------------------

    @property
    def bound(self) -> bool:
        return self.is_bound

    def _required(self, attribute: SchemaAttribute) -> bool:
        return attribute.required_on_offer if self.side == "offer" else attribute.required_on_bid

    def _field(self, attribute: SchemaAttribute) -> AttributeField:
        name, data, t = attribute.name, self.data, attribute.type
        required = self._required(attribute)
        if t in (Type.INT, Type.DECIMAL, Type.FLOAT, Type.DATE, Type.TIMESTAMP):
            inputs = _range_inputs(attribute, data, name)
            for item in inputs:
                self.fields[item.name] = LiteralField(attribute)
            return AttributeField(attribute, "range", required, inputs)
        label = attribute.label
        if t is Type.STRING:
            value = Input(f"{name}__eq", "is", "text", data.get(f"{name}__eq", ""), context=label)
            self.fields[value.name] = LiteralField(attribute)
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
        for item in inputs[1:]:
            # checked in clean(), where the mode says which coordinates count
            self.fields[item.name] = forms.Field(required=False)
        return AttributeField(attribute, "point" if t is Type.POINT else "box", required, inputs)

    def _tier(self, index: int) -> Tier:
        p, data, context = f"tier-{index}-", self.data, f"Tier {index + 1}"
        inputs = []
        if self.quantity is not None:
            for suffix, label in (("qmin", "from"), ("qmax", "to")):
                item = _number_input(self.quantity, p + suffix, label, data.get(p + suffix, ""))
                item.context = f"{context} {self.quantity.label.lower()}"
                self.fields[item.name] = LiteralField(self.quantity)
                inputs.append(item)
        price = Input(p + "price", "price", "text", data.get(p + "price", ""), inputmode="decimal")
        price.context = context
        self.fields[price.name] = LiteralField(self.price_attribute)
        inputs.append(price)
        return Tier(index, inputs)

    # -- checking -----------------------------------------------------------------------

    def clean(self) -> dict[str, Any]:
        """The coordinates each point or box attribute's mode uses, in order, up to the first
        one missing or not a number; their text goes in ``coordinates`` under the
        attribute's name."""
        super().clean()
        self.coordinates: dict[str, str] = {}
        for f in self.attribute_fields:
            if f.kind in ("point", "box"):
                coords = self._coords(f)
                if coords is not None:
                    self.coordinates[f.attribute.name] = coords
        return self.cleaned_data

    def _coords(self, f: AttributeField) -> str | None:
        mode, *coords = f.inputs
        by_name = {i.name.rsplit("__", 1)[1]: i for i in coords}
        if f.kind == "point" and mode.value == "at":
            names = ["x", "y"]
        elif mode.value in ("within", "eq", *BOX_OPERATORS) and (
            f.kind == "box" or mode.value == "within"
        ):
            names = ["x1", "y1", "x2", "y2"]
        else:
            return None
        values = []
        for item in (by_name[n] for n in names):
            value = item.value.strip()
            if not value:
                self.add_error(item.name, "Enter this coordinate.")
                return None
            try:
                bare_coordinate(value)
            except ConstraintError as exc:
                hint = exc.code == "syntax"  # else past the language's bounds: it says which
                self.add_error(item.name, "Enter a number." if hint else _sentence(exc.message))
                return None
            values.append(value)
        return ", ".join(values)

    def _mark(self, inputs: list[Input]) -> None:
        """Give ``inputs`` their fields' first errors (checking the form if not yet done)."""
        errors = self.errors
        for item in inputs:
            if item.name in errors:
                item.error = str(errors[item.name][0])  # the message (ErrorList holds text)

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
        if not self.is_bound:
            self.error = NOTHING
            return None
        self._mark([i for i in self.inputs if i is not self.closes_at_input])
        if self.has_errors:
            return None
        common = [p for f in self.attribute_fields for p in self._predicates(f)]
        price = self.price_attribute.name
        disjuncts: list[list[str]] = []
        if self.side == "bid":
            value = self.cleaned_data["price"]
            disjuncts.append([*common, *([f"{price} <= {value}"] if value else [])])
        elif not self.tiered:
            value = self.cleaned_data["price"]
            op = ">=" if self.price_mode.value == "reserve" else "="
            disjuncts.append([*common, *([f"{price} {op} {value}"] if value else [])])
        else:
            op = ">=" if self.price_mode.value == "reserve" else "="
            assert self.quantity is not None
            for tier in self.tiers:
                if not any(i.value.strip() for i in tier.inputs):
                    continue  # an empty tier row
                qmin, qmax, tier_price = (self.cleaned_data[i.name] for i in tier.inputs)
                preds = [*common, *self._range(self.quantity.name, qmin, qmax)]
                if tier_price:
                    preds.append(f"{price} {op} {tier_price}")
                disjuncts.append(preds)
            if not disjuncts:
                disjuncts.append(common)  # the services say what is missing
        disjuncts = [d for d in disjuncts if d]
        if not disjuncts:
            self.error = NOTHING
            return None
        if len(disjuncts) == 1:
            return " AND ".join(disjuncts[0])
        return " OR ".join(f"({' AND '.join(d)})" for d in disjuncts)

    @property
    def inputs(self) -> list[Input]:
        out = [i for f in self.attribute_fields for i in f.inputs]
        out += [i for t in self.tiers for i in t.inputs]
        return [*out, self.price_input, self.closes_at_input]

    @property
    def has_errors(self) -> bool:
        return any(i.error for i in self.inputs)

    @staticmethod
    def _range(name: str, lo: str | None, hi: str | None) -> list[str]:
        if lo and hi:
            return [f"{name} = {lo}" if lo == hi else f"{name} BETWEEN {lo} AND {hi}"]
        if lo:
            return [f"{name} >= {lo}"]
        if hi:
            return [f"{name} <= {hi}"]
        return []

    def _predicates(self, f: AttributeField) -> list[str]:
        name, data = f.attribute.name, self.cleaned_data
        if f.kind == "range":
            return self._range(name, data[f.inputs[0].name], data[f.inputs[1].name])
        if f.kind == "value":
            value = data[f.inputs[0].name]
            return [f"{name} = {value}"] if value else []
        coords, mode = self.coordinates.get(name), f.inputs[0].value
        if coords is None:
            return []
        if f.kind == "point":
            if mode == "at":
                return [f"{name} = POINT({coords})"]
            return [f"point {name} WITHIN BOX({coords})"]
        return [f"{name} {BOX_OPERATORS.get(mode, '=')} BOX({coords})"]

    def closes_at_value(self) -> dt.datetime | None:
        """The optional closing time (entered in UTC), or None after marking an error."""
        if self.side != "offer":
            return None
        self._mark([self.closes_at_input])
        return self.cleaned_data.get("closes_at")
