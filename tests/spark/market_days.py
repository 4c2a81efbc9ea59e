"""MarketDay rows for the tests of the pages that show them (no Spark)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from exchange.models import MarketDay

COMPUTED_AT = dt.datetime(2026, 3, 11, 0, 30, tzinfo=dt.UTC)

# A day with nothing in it: what the job writes for a market without activity.
QUIET: dict[str, Any] = {
    "trades": 0,
    "volume": Decimal(0),
    "notional": Decimal(0),
    "vwap": None,
    "open": None,
    "high": None,
    "low": None,
    "close": None,
    "offers_posted": 0,
    "offers_sold": 0,
    "offers_unsold": 0,
    "bids_posted": 0,
    "offers_matched": 0,
    "match_rate": None,
    "first_match_median_seconds": None,
    "best_value_offers": 0,
    "best_value_high": None,
    "best_value_low": None,
    "best_value_spread": None,
}


def market_day(market: Any, day: dt.date, **overrides: Any) -> MarketDay:
    """A committed-looking row of a day with two trades (every figure set), with overrides."""
    values: dict[str, Any] = {
        "trades": 2,
        "volume": Decimal("300"),
        "notional": Decimal("310"),
        "vwap": Decimal("1.0333333333"),
        "open": Decimal("1.00"),
        "high": Decimal("1.10"),
        "low": Decimal("0.95"),
        "close": Decimal("1.05"),
        "offers_posted": 4,
        "offers_sold": 2,
        "offers_unsold": 1,
        "bids_posted": 5,
        "offers_matched": 3,
        "match_rate": 0.75,
        "first_match_median_seconds": 12.5,
        "best_value_offers": 2,
        "best_value_high": Decimal("1.20"),
        "best_value_low": Decimal("0.90"),
        "best_value_spread": Decimal("0.30"),
    }
    values.update(overrides)
    return MarketDay.objects.create(market=market, day=day, computed_at=COMPUTED_AT, **values)
