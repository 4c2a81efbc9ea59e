"""The rules a market adds to the constraint language (SPEC 5.1, 5.2).

* A market's schema gives each attribute its type; attributes outside it are refused.
* Every offer and bid implicitly carries ``subject = '<market subject>'`` so the engine never
  matches across markets (added by the store, not shown in the order's text).
* Prices are never negative and lie on the market's tick: a literal off the tick is an error,
  an open bound moves to the next tick inside (``price < 1.10`` at 0.01 is ``price <= 1.09``).
* An offer fixes its price or states a reserve (a lowest acceptable price); a bid bounds the
  price from above. Schema attributes a bid leaves out become wildcards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from rest_framework import serializers

import matching
from matching.model import Attribute, Constraint, Disjunct, Interval, Type, Value, Wildcard
from matching.syntax import MAX_PREDICATES

from .errors import InvalidInput
from .models.markets import ATTRIBUTE_NAME_LENGTH, LABEL_LENGTH, MAX_ATTRIBUTES, UNIT_LENGTH
from .numbers import price_quantum, tick_text

SUBJECT_ATTRIBUTE = "subject"
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
TYPE_NAMES = {t.value: t for t in Type}
# The synonyms SPEC 2.1 allows as type prefixes, accepted in schemas too.
TYPE_NAMES.update(
    {"integer": Type.INT, "numeric": Type.DECIMAL, "double": Type.FLOAT, "text": Type.STRING}
)
ROLES = ("price", "quantity")

Side = Literal["offer", "bid"]
# What a trader sends as a constraint: the text, or the decoded JSON form (an object).
ConstraintSource = str | dict[str, Any]
# A schema as staff send it: a list of attribute objects (validated by ``schema_parse``).
RawSchema = list[dict[str, Any]]


@dataclass(frozen=True)
class SchemaAttribute:
    name: str
    type: Type
    label: str
    unit: str
    required_on_offer: bool
    required_on_bid: bool
    role: str | None

    @property
    def attribute(self) -> Attribute:
        return Attribute(self.name, self.type)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type.value,
            "label": self.label,
            "unit": self.unit,
            "required_on_offer": self.required_on_offer,
            "required_on_bid": self.required_on_bid,
            "role": self.role,
        }


@dataclass(frozen=True)
class MarketSchema:
    attributes: tuple[SchemaAttribute, ...]

    @property
    def types(self) -> dict[str, Type]:
        return {a.name: a.type for a in self.attributes}

    def by_role(self, role: str) -> SchemaAttribute | None:
        return next((a for a in self.attributes if a.role == role), None)

    @property
    def price(self) -> SchemaAttribute:
        price = self.by_role("price")
        assert price is not None  # schema_parse guarantees exactly one
        return price

    def as_list(self) -> list[dict[str, Any]]:
        return [a.as_dict() for a in self.attributes]


class _Text(serializers.CharField):
    """A JSON string as sent: DRF's CharField would also take 5 as "5" and trim spaces. It
    refuses NUL and lone surrogates, as it should: PostgreSQL can store neither (a NUL in a
    label was a 500)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return data


class _TypeName(serializers.Field):
    """A type's name or a SPEC 2.1 synonym, in any case: the type."""

    default_error_messages = {"invalid": "not a type"}

    def to_internal_value(self, data: Any) -> Type:
        found = TYPE_NAMES.get(data.lower()) if isinstance(data, str) else None
        if found is None:
            self.fail("invalid")
        return found


class _Flag(serializers.BooleanField):
    """true or false only (DRF's BooleanField also takes "yes", 1, "on")."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


def _name_rule(name: str) -> None:
    if not NAME_RE.match(name):
        raise serializers.ValidationError("not a name", code="not_a_name")


def _not_the_subject(name: str) -> None:
    if name == SUBJECT_ATTRIBUTE:
        raise serializers.ValidationError("reserved", code="reserved")


def _duplicate_at(names: list[str]) -> int | None:
    """The index of the first name that an earlier one already is."""
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            return index
        seen.add(name)
    return None


class _SchemaAttributes(serializers.ListSerializer):
    """The rules across the list; each attribute's are ``_SchemaAttribute``'s."""

    def validate(self, attrs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if _duplicate_at([a["name"] for a in attrs]) is not None:
            raise serializers.ValidationError("duplicate", code="duplicate")
        prices = [a for a in attrs if a["role"] == "price"]
        if len(prices) != 1 or prices[0]["type"] is not Type.DECIMAL:
            raise serializers.ValidationError("price", code="price")
        quantities = [a for a in attrs if a["role"] == "quantity"]
        if len(quantities) > 1 or (
            quantities and quantities[0]["type"] not in (Type.INT, Type.DECIMAL)
        ):
            raise serializers.ValidationError("quantity", code="quantity")
        return attrs


# The longest text of each attribute field that has a limit (its column's, in the models).
_LIMITS = {"name": ATTRIBUTE_NAME_LENGTH, "label": LABEL_LENGTH, "unit": UNIT_LENGTH}


class _SchemaAttribute(serializers.Serializer):
    """One attribute as staff send it; the fields in the order their problems are told."""

    # Declared in get_fields: the stubs type Field.label (a form label) as a string, so a
    # field named label in the class body would not type-check.
    def get_fields(self) -> dict[str, serializers.Field]:
        return {
            "name": _Text(max_length=_LIMITS["name"], validators=[_name_rule, _not_the_subject]),
            "type": _TypeName(),
            "role": serializers.ChoiceField(
                choices=ROLES, allow_null=True, required=False, default=None
            ),
            "required_on_offer": _Flag(required=False, default=False),
            "required_on_bid": _Flag(required=False, default=False),
            "label": _Text(
                max_length=_LIMITS["label"], allow_blank=True, required=False, default=""
            ),
            "unit": _Text(max_length=_LIMITS["unit"], allow_blank=True, required=False, default=""),
        }


# What each refusal says, by the field and DRF's error code (None: any other code).
_SCHEMA_MESSAGES = {
    ("schema", None): "The schema must be a non-empty list of attributes.",
    ("schema", "max_length"): "A schema has at most {limit} attributes; this one has {length}.",
    ("schema", "price"): "Exactly one attribute must have the role price, and it must be decimal.",
    ("schema", "quantity"): "At most one attribute has the role quantity, and it must be int "
    "or decimal.",
    ("attribute", None): "{where} must be an object.",
    ("attribute", "duplicate"): "{where}: the attribute {name} appears twice.",
    ("name", None): "{where}.name must be a name such as lot or delivery_date (letters, "
    "digits, _).",
    ("name", "reserved"): "{where}: 'subject' is reserved for the market's subject.",
    ("type", None): f"{{where}}.type must be one of {', '.join(t.value for t in Type)}.",
    ("role", None): "{where}.role must be price, quantity or null.",
    ("flag", None): "{where}.{field} must be true or false.",
    ("text", None): "{where}.{field} must be a string.",
    ("text", "null_characters_not_allowed"): "{where}.{field} must not contain a NUL character.",
    ("text", "surrogate_characters_not_allowed"): (
        "{where}.{field} must not contain a lone surrogate (an unpaired \\ud800-\\udfff)."
    ),
}
_LENGTH = "{where}.{field} is {length} characters long; at most {limit}."
_FIELD_KINDS = {
    "required_on_offer": "flag",
    "required_on_bid": "flag",
    "label": "text",
    "unit": "text",
}


def _attribute_refusal(index: int, item: Any, codes: dict[str, list[str]]) -> str:
    """The first problem of attribute ``index``, its fields in the serializer's order."""
    where = f"schema[{index}]"
    if "non_field_errors" in codes:
        return _SCHEMA_MESSAGES["attribute", None].format(where=where)
    field, (code, *_) = next(iter(codes.items()))
    if code == "max_length":
        length = len(item[field])
        return _LENGTH.format(where=where, field=field, length=length, limit=_LIMITS[field])
    kind = _FIELD_KINDS.get(field, field)
    message = _SCHEMA_MESSAGES.get((kind, code)) or _SCHEMA_MESSAGES[kind, None]
    return message.format(where=where, field=field)


def _schema_refusal(raw: Any, codes: Any) -> str:
    """The message of the first problem the serializer found, as a reader meets them: the
    list, then each attribute in turn (a repeated name right after its name's own rules),
    then the roles across the list."""
    if isinstance(codes, list) and all(isinstance(c, str) for c in codes):
        codes = {"non_field_errors": codes}  # the schema is null
    if isinstance(codes, list):  # some attributes were refused
        names: list[str] = []
        for index, item_codes in enumerate(codes):
            if isinstance(item_codes, list):  # the attribute is null
                item_codes = {"non_field_errors": item_codes}
            if "name" not in item_codes and "non_field_errors" not in item_codes:
                names.append(raw[index]["name"])
                if _duplicate_at(names) is not None:
                    return _SCHEMA_MESSAGES["attribute", "duplicate"].format(
                        where=f"schema[{index}]", name=names[-1]
                    )
            if item_codes:
                return _attribute_refusal(index, raw[index], item_codes)
    (code, *_) = codes["non_field_errors"]
    if code == "duplicate":
        twice = _duplicate_at([item["name"] for item in raw])
        assert twice is not None
        return _SCHEMA_MESSAGES["attribute", "duplicate"].format(
            where=f"schema[{twice}]", name=raw[twice]["name"]
        )
    message = _SCHEMA_MESSAGES.get(("schema", code)) or _SCHEMA_MESSAGES["schema", None]
    return message.format(limit=MAX_ATTRIBUTES, length=len(raw) if code == "max_length" else 0)


def schema_parse(raw: Any) -> MarketSchema:
    """Validate a schema as sent by staff (a list of attribute objects) and return it typed:
    DRF's serializers check it (``_SchemaAttribute``, ``_SchemaAttributes``), and the first
    problem found is the ``invalid_schema`` error, in the words of ``_SCHEMA_MESSAGES``."""
    attributes = _SchemaAttributes(
        child=_SchemaAttribute(), allow_empty=False, max_length=MAX_ATTRIBUTES
    )
    try:
        valid = attributes.run_validation(raw)
    except serializers.ValidationError as exc:
        message = _schema_refusal(raw, exc.get_codes())
        raise InvalidInput("invalid_schema", message, field="schema") from None
    return MarketSchema(
        tuple(
            SchemaAttribute(
                name=a["name"],
                type=a["type"],
                label=a["label"] or a["name"].replace("_", " "),
                unit=a["unit"],
                required_on_offer=a["required_on_offer"],
                required_on_bid=a["required_on_bid"],
                role=a["role"],
            )
            for a in valid
        )
    )


def subject_attribute() -> Attribute:
    return Attribute(SUBJECT_ATTRIBUTE, Type.STRING)


def subject_predicate(subject: str) -> Interval:
    return Interval(subject, True, subject, True)


def numeric_value(value: Value) -> Decimal:
    """A bound of the price or quantity attribute as a ``Decimal``. ``schema_parse`` makes
    the price decimal and the quantity int or decimal, so no other value reaches here."""
    assert isinstance(value, int | Decimal), f"not a numeric bound: {value!r}"
    return Decimal(value)


def _locate(source: Any, name: str) -> int | None:
    """Where an attribute is first named in the text (for pointing at an error)."""
    if not isinstance(source, str):
        return None
    match = re.search(
        rf'(?<![A-Za-z0-9_"]){re.escape(name)}(?![A-Za-z0-9_])|"{re.escape(name)}"', source
    )
    return match.start() if match else None


def _snap_price(
    interval: Interval | Wildcard, *, tick: Decimal, side: Side, source: Any, name: str
) -> Interval | None:
    """The price set on the tick grid, closed on both ends; ``None`` when nothing is left."""
    where = _locate(source, name)

    def refused(code: str, message: str) -> InvalidInput:
        """The error, pointing at where the price attribute is first named."""
        return InvalidInput(code, message, field="constraint", position=where)

    if isinstance(interval, Wildcard):
        interval = Interval(None, False, None, False)
    lo = None if interval.lo is None else numeric_value(interval.lo)
    hi = None if interval.hi is None else numeric_value(interval.hi)
    for bound in (lo, hi):
        if bound is not None and bound % tick != 0:
            raise refused(
                "off_tick",
                f"The price {bound} is not on this market's tick of {tick_text(tick)}: use a multiple of {tick_text(tick)}.",
            )
        if bound is not None and bound < 0:
            raise refused("negative_price", "Prices cannot be negative.")
    if side == "offer" and lo is None:
        raise refused(
            "missing_price_bound",
            f"An offer must fix its price ({name} = 1.00) or give a lowest acceptable price ({name} >= 0.90).",
        )
    if side == "bid" and hi is None:
        raise refused(
            "missing_price_bound",
            f"A bid must bound the price from above, for example {name} <= 1.10.",
        )
    # Both bounds are on the tick (checked above), so an open bound moves one tick inwards.
    # A bid's missing lower bound stays open: prices below zero do not exist, and every
    # offer's lowest price is at least zero, so the intersection is the same either way.
    places = price_quantum(tick)
    new_lo = None if lo is None else lo + (0 if interval.lo_closed else tick)
    new_hi = None if hi is None else hi - (0 if interval.hi_closed else tick)
    if new_lo is not None and new_hi is not None and new_hi < new_lo:
        return None
    return Interval(
        None if new_lo is None else new_lo.quantize(places),
        new_lo is not None,
        None if new_hi is None else new_hi.quantize(places),
        new_hi is not None,
    )


@dataclass(frozen=True)
class OrderConstraint:
    """An order's constraint after the market's rules; ``constraint`` excludes the subject."""

    constraint: Constraint
    text: str
    json: Any


def order_constraint(
    *, schema: MarketSchema, tick: Decimal, side: Side, source: Any
) -> OrderConstraint:
    """Parse ``source`` (text or JSON form) as an offer or bid of a market with ``schema``."""
    if not isinstance(source, (str, dict)):
        raise InvalidInput(
            "invalid_constraint",
            "The constraint must be text or a JSON object.",
            field="constraint",
        )
    try:
        parsed = matching.parse(source, schema=schema.types)
    except matching.ConstraintError as exc:
        # Text errors point at a character; JSON-form errors at a path inside the object.
        field = "constraint" if exc.path is None else f"constraint{exc.path}"
        raise InvalidInput(exc.code, exc.message, field=field, position=exc.position) from exc
    known = {a.attribute for a in schema.attributes}
    price = schema.price
    disjuncts: list[Disjunct] = []
    for disjunct in parsed:
        for attribute, _ in disjunct:
            if attribute.name == SUBJECT_ATTRIBUTE:
                raise InvalidInput(
                    "subject_implied",
                    "The market's subject is implied; leave it out of the constraint.",
                    field="constraint",
                    position=_locate(source, attribute.name),
                )
            if attribute not in known:
                names = ", ".join(a.name for a in schema.attributes)
                declared = schema.types.get(attribute.name)
                message = (
                    f"{attribute.name} is a {declared.value} attribute in this market, not {attribute.type.value}."
                    if declared
                    else f"This market has no attribute {attribute.name}; it has {names}."
                )
                raise InvalidInput(
                    "wrong_type" if declared else "unknown_attribute",
                    message,
                    field="constraint",
                    position=_locate(source, attribute.name),
                )
        for spec in schema.attributes:
            required = spec.required_on_offer if side == "offer" else spec.required_on_bid
            if required and disjunct.get(spec.attribute) is None:
                raise InvalidInput(
                    "missing_attribute",
                    f"Every {'offer' if side == 'offer' else 'bid'} in this market must constrain "
                    f"{spec.name} ({spec.label}).",
                    field="constraint",
                )
        items: dict[Attribute, Any] = dict(disjunct.items)
        snapped = _snap_price(
            items.get(price.attribute, Wildcard()),
            tick=tick,
            side=side,
            source=source,
            name=price.name,
        )
        if snapped is None:
            continue  # no price on the tick grid is left in this disjunct
        items[price.attribute] = snapped
        disjunct = Disjunct(tuple(items.items()))
        disjuncts.append(bid_widened(disjunct, schema) if side == "bid" else disjunct)
    unique = tuple(dict.fromkeys(disjuncts))
    if not unique:
        raise InvalidInput(
            "unsatisfiable",
            f"No price on this market's tick of {tick_text(tick)} satisfies the constraint.",
            field="constraint",
        )
    constraint = Constraint(unique)
    text = _stored_form_check(constraint, source=source, schema=schema)
    return OrderConstraint(constraint, text, matching.to_json(constraint))


def _stored_form_check(constraint: Constraint, *, source: Any, schema: MarketSchema) -> str:
    """The canonical text of ``constraint`` once it is known to be storable as it is.

    The rules above add predicates the trader did not write (a bid's wildcards for the
    schema's other attributes; the engine adds the subject to every disjunct), so a
    constraint inside the language's limits as written can be outside them as stored.
    Stored text must always print back and parse to the same constraint (SPEC 2.5), so the
    limits are checked here on the stored form: its text parses back to an equal constraint,
    and its predicates with the subject's stay within the limit.
    """
    position = 0 if isinstance(source, str) else None
    added = "the attributes you left out and the market's subject"
    predicates = sum(len(d.items) + 1 for d in constraint)  # + 1: the subject
    if predicates > MAX_PREDICATES:
        raise InvalidInput(
            "too_many_predicates",
            f"Once the market adds {added}, this constraint would have {predicates} conditions, "
            f"more than the {MAX_PREDICATES} allowed: constrain every attribute or split it "
            "into several orders.",
            field="constraint",
            position=position,
        )
    text = matching.to_text(constraint)
    try:
        again = matching.parse(text, schema=schema.types)
    except matching.ConstraintError as exc:
        raise InvalidInput(
            exc.code,
            f"Once the market adds {added}, this constraint would be stored in a form that "
            f"is refused ({exc.message}): simplify it or split it into several orders.",
            field="constraint",
            position=position,
        ) from exc
    if again != constraint:
        raise InvalidInput(
            "not_storable",
            "This constraint would not read back the same once stored: simplify it.",
            field="constraint",
            position=position,
        )
    return text


def fixed_price(constraint: Constraint, schema: MarketSchema) -> bool:
    """Whether an offer fixes its price in every tier (``price = 1.00``: first come, first
    served, so a higher bid cannot take the place of an earlier one at the same price)
    rather than stating a reserve (an auction)."""
    for disjunct in constraint:
        interval = disjunct.get(schema.price.attribute)
        if not isinstance(interval, Interval) or interval.lo is None or interval.lo != interval.hi:
            return False
    return True


def bid_widened(disjunct: Disjunct, schema: MarketSchema) -> Disjunct:
    """A bid's disjunct with a wildcard for every schema attribute it leaves out (a bid
    that does not care about an attribute must still name it to match an offer that does)."""
    named = {attribute for attribute, _ in disjunct}
    missing = tuple(
        (a.attribute, Wildcard()) for a in schema.attributes if a.attribute not in named
    )
    return Disjunct((*disjunct.items, *missing)) if missing else disjunct


def with_subject(constraint: Constraint, subject: str) -> Constraint:
    """The constraint the engine stores: every disjunct also says ``subject = '<subject>'``."""
    attribute, predicate = subject_attribute(), subject_predicate(subject)
    return Constraint(tuple(Disjunct(((attribute, predicate), *d.items)) for d in constraint))
