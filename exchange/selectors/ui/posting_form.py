"""Reads for the posting form: a stored order's text parsed back with its market's schema."""

from __future__ import annotations

import matching
from exchange.market_rules import MarketSchema


def constraint_parsed(*, text: str, schema: MarketSchema) -> matching.Constraint:
    """A stored order's canonical text, parsed back with the market's schema."""
    return matching.parse(text, schema=schema.types)
