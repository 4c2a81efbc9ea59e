"""The staff console's numbers and its list of open auctions (the dashboard at ``/staff/``
and the admin's order and trade pages)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from exchange.models import Market
from exchange.numbers import grouped_text, price_text
from exchange.selectors.markets import market_schema

NONE_SHOWN = "—"


@dataclass(frozen=True)
class MarketNumbers:
    """How one market writes its numbers, as the rest of the site writes them for people
    (``exchange.numbers.grouped_text``): prices to its tick followed by the price
    attribute's unit (``5,200.00 EUR``), quantities without trailing zeros followed by the
    quantity attribute's unit (``20,000 pencils``); a missing number is a dash."""

    tick: Decimal
    price_unit: str
    quantity_unit: str

    def price(self, value: Decimal | None) -> str:
        text = price_text(value, self.tick)
        return _with_unit(None if text is None else grouped_text(text), self.price_unit)

    def quantity(self, value: Decimal | None) -> str:
        return _with_unit(None if value is None else grouped_text(value), self.quantity_unit)


def _with_unit(text: str | None, unit: str) -> str:
    if text is None:
        return NONE_SHOWN
    return f"{text} {unit}" if unit else text


def market_numbers(*, market: Market) -> MarketNumbers:
    """The way ``market`` writes its numbers (its schema is parsed once and cached)."""
    schema = market_schema(market=market)
    quantity = schema.by_role("quantity")
    return MarketNumbers(market.tick, schema.price.unit, quantity.unit if quantity else "")
