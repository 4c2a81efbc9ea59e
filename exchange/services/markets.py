"""Writing markets (staff): creation and schema changes while the system runs."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from exchange.errors import InvalidInput
from exchange.market_rules import schema_parse
from exchange.models import Market
from exchange.models.markets import SUBJECT_PATTERN


def _tick(value: Any) -> Decimal:
    try:
        tick = Decimal(str(value))
    except (InvalidOperation, ValueError):
        tick = Decimal(-1)
    if not tick.is_finite() or tick <= 0 or tick.as_tuple().exponent < -10:  # type: ignore[operator]
        raise InvalidInput(
            "invalid_tick", "The tick must be a positive decimal such as 0.01.", field="tick"
        )
    return tick


def market_create(
    *,
    subject: str,
    title: str,
    schema: Any,
    tick: Any = "0.01",
    pricing: str = Market.Pricing.FIRST,
    description: str = "",
) -> Market:
    if not isinstance(subject, str) or not re.match(SUBJECT_PATTERN, subject) or len(subject) > 200:
        raise InvalidInput(
            "invalid_subject",
            "The subject must be dot-separated lower-case tokens, such as office.supplies.pencils.",
            field="subject",
        )
    if pricing not in Market.Pricing.values:
        raise InvalidInput("invalid_pricing", "Pricing must be first or second.", field="pricing")
    parsed = schema_parse(schema)
    market = Market(
        subject=subject,
        title=title or subject,
        description=description or "",
        schema=parsed.as_list(),
        tick=_tick(tick),
        pricing=pricing,
    )
    try:
        market.full_clean()
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise InvalidInput("invalid_market", "; ".join(messages), field=field) from exc
    with transaction.atomic():
        market.save()
    return market
