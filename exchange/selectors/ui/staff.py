"""The staff console's numbers and its list of open auctions (the dashboard at ``/staff/``
and the admin's order and trade pages)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from exchange.models import Market
from exchange.numbers import number_text, price_text
from exchange.selectors.markets import market_schema

NONE_SHOWN = "—"


@dataclass(frozen=True)
class MarketNumbers:
    """How one market writes its numbers: prices to its tick followed by the price
    attribute's unit (``1.18 EUR``), quantities without trailing zeros followed by the
    quantity attribute's unit (``8000 pencils``); a missing number is a dash."""

    tick: Decimal
    price_unit: str
    quantity_unit: str

    def price(self, value: Decimal | None) -> str:
        return _with_unit(price_text(value, self.tick), self.price_unit)

    def quantity(self, value: Decimal | None) -> str:
        return _with_unit(None if value is None else number_text(value), self.quantity_unit)


def _with_unit(text: str | None, unit: str) -> str:
    if text is None:
        return NONE_SHOWN
    return f"{text} {unit}" if unit else text


def market_numbers(*, market: Market) -> MarketNumbers:
    """The way ``market`` writes its numbers (its schema is parsed once and cached)."""
    schema = market_schema(market=market)
    quantity = schema.by_role("quantity")
    return MarketNumbers(market.tick, schema.price.unit, quantity.unit if quantity else "")
