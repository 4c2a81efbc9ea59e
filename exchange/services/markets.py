"""Writing markets (staff): creation and schema changes while the system runs."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.db import transaction

import matching
from exchange.errors import InvalidInput
from exchange.market_rules import MarketSchema, RawSchema, bid_widened, schema_parse
from exchange.models import Bid, Market, Offer
from exchange.models.markets import DESCRIPTION_LENGTH, TITLE_LENGTH
from exchange.numbers import decimal_exponent
from exchange.services.orders import order_changed
from matching.model import Constraint
from matching.subjects import SubjectError, validate_subject


def _tick(value: object) -> Decimal:
    try:
        tick = Decimal(str(value))
    except (InvalidOperation, ValueError):
        tick = Decimal(-1)
    if not tick.is_finite() or tick <= 0 or decimal_exponent(tick) < -10 or tick >= 10**9:
        raise InvalidInput(
            "invalid_tick", "The tick must be a positive decimal such as 0.01.", field="tick"
        )
    return tick


def subject_check(subject: object) -> str:
    """``subject`` if a market may have it (the rule of ``matching.subjects``), else
    ``InvalidInput`` saying what is wrong and where."""
    if not isinstance(subject, str):
        raise InvalidInput(
            "invalid_subject",
            "The subject must be text: dot-separated lower-case tokens such as "
            "office.supplies.pencils.",
            field="subject",
        )
    try:
        return validate_subject(subject)
    except SubjectError as exc:
        raise InvalidInput(
            "invalid_subject",
            f"The subject is not valid: {exc.message}.",
            field="subject",
            position=exc.position,
        ) from exc


def _text(value: object, field: str, *, required: bool, limit: int) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str) or len(value) > limit or (required and not value.strip()):
        raise InvalidInput(
            f"invalid_{field}",
            f"The {field} must be text of at most {limit} characters.",
            field=field,
        )
    return value.strip()


def _pricing(value: object) -> str:
    if not isinstance(value, str) or value not in Market.Pricing.values:
        raise InvalidInput("invalid_pricing", "Pricing must be first or second.", field="pricing")
    return value


def market_create(
    *,
    subject: str,
    title: str,
    schema: RawSchema,
    tick: Decimal | str = "0.01",
    pricing: str = Market.Pricing.FIRST,
    description: str = "",
) -> Market:
    subject = subject_check(subject)
    market = Market(
        subject=subject,
        title=_text(title, "title", required=True, limit=TITLE_LENGTH),
        description=_text(description, "description", required=False, limit=DESCRIPTION_LENGTH),
        schema=schema_parse(schema).as_list(),
        tick=_tick(tick),
        pricing=_pricing(pricing),
    )
    with transaction.atomic():
        if Market.objects.select_for_update().filter(subject=subject).exists():
            raise InvalidInput(
                "duplicate_subject", f"A market {subject} exists already.", field="subject"
            )
        market.save()
    return market


def market_update(
    *,
    market_id: int,
    title: str | None = None,
    description: str | None = None,
    schema: RawSchema | None = None,
    tick: Decimal | str | None = None,
    pricing: str | None = None,
) -> Market:
    """Change a market while it runs. Attributes that live orders use keep their name and
    type, and the tick only changes while the market has no live orders; new attributes,
    labels, units, the required flags and the pricing rule can change at any time."""
    with transaction.atomic():
        market = Market.objects.select_for_update(no_key=True).get(pk=market_id)
        live = market_has_live_orders(market)
        fields = []
        if title is not None:
            market.title = _text(title, "title", required=True, limit=TITLE_LENGTH)
            fields.append("title")
        if description is not None:
            market.description = _text(
                description, "description", required=False, limit=DESCRIPTION_LENGTH
            )
            fields.append("description")
        if pricing is not None:
            market.pricing = _pricing(pricing)
            fields.append("pricing")
        if tick is not None:
            new_tick = market_change_check(market=market, live=live, tick=tick)
            assert new_tick is not None  # returned parsed because it was given
            market.tick = new_tick
            fields.append("tick")
        if schema is not None:
            parsed = schema_parse(schema)
            market_change_check(market=market, live=live, schema=schema)
            added = [
                a for a in parsed.attributes if a.name not in {x["name"] for x in market.schema}
            ]
            market.schema = parsed.as_list()
            fields.append("schema")
        else:
            added = []
        if fields:
            market.save(update_fields=[*fields, "updated_at"])
        if added:
            _bids_widen(market, parsed)
    return market


def market_has_live_orders(market: Market) -> bool:
    return (
        Offer.objects.filter(market=market, state=Offer.State.OPEN).exists()
        or Bid.objects.filter(market=market, state=Bid.State.ACTIVE).exists()
    )


def market_change_check(
    *,
    market: Market,
    live: bool | None = None,
    schema: RawSchema | None = None,
    tick: Decimal | str | None = None,
) -> Decimal | None:
    """Refuse changes that live orders could not survive; returns the parsed tick if given."""
    if live is None:
        live = market_has_live_orders(market)
    new_tick = None
    if tick is not None:
        new_tick = _tick(tick)
        if new_tick != market.tick and live:
            raise InvalidInput(
                "market_in_use",
                "The tick cannot change while the market has open offers or active bids.",
                field="tick",
            )
    if schema is not None and live:
        parsed = schema_parse(schema)
        old = {(a["name"], a["type"]) for a in market.schema}
        new = {(a.name, a.type.value) for a in parsed.attributes}
        if not old <= new:
            missing = ", ".join(sorted(f"{n} ({t})" for n, t in old - new))
            raise InvalidInput(
                "market_in_use",
                f"Open offers or active bids use {missing}: keep its name and type while they do.",
                field="schema",
            )
        old_roles = {a.name: a.role for a in schema_parse(market.schema).attributes}
        if any(a.role != old_roles.get(a.name, a.role) for a in parsed.attributes):
            raise InvalidInput(
                "market_in_use",
                "Roles cannot move while the market has live orders.",
                field="schema",
            )
    return new_tick


def _bids_widen(market: Market, schema: MarketSchema) -> None:
    """Active bids say "any value" for the attributes added to their market's schema too
    (the market rule of ``bid_widened``); each widened bid is a change for the cycle.

    A bid whose stored text no longer parses is left as it is and handed to the cycle as a
    change, which sets it aside (services.matching): one bad bid never fails the update."""
    for bid in (
        Bid.objects.select_for_update(no_key=True)
        .filter(market=market, state=Bid.State.ACTIVE, set_aside_at=None)
        .order_by("pk")
    ):
        try:
            constraint = matching.parse(bid.constraint_text)
        except matching.ConstraintError:
            order_changed(bid, None)
            continue
        widened = Constraint(tuple(bid_widened(d, schema) for d in constraint))
        if widened == constraint:
            continue
        bid.constraint_text, bid.constraint_json = (
            matching.to_text(widened),
            matching.to_json(widened),
        )
        bid.save(update_fields=["constraint_text", "constraint_json", "updated_at"])
        # Not an event: the bid accepts what it did (a wildcard for a new attribute), at
        # the same version.
        order_changed(bid, None)
