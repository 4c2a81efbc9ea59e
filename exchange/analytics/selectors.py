"""Reading the nightly analytics: every market's rows for the staff page, one market's
public figures for its market page."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from decimal import Decimal

from exchange.models import Market, MarketDay


@dataclass(frozen=True)
class MarketSeries:
    """One market's rows over a run of days; ``rows[i]`` is for ``days[i]`` (None: no row)."""

    market: Market
    days: list[dt.date]
    rows: list[MarketDay | None]

    @property
    def latest(self) -> MarketDay | None:
        return next((r for r in reversed(self.rows) if r is not None), None)


def latest_analytics_day() -> dt.date | None:
    """The last day the analytics were computed for, if any."""
    return MarketDay.objects.order_by("-day").values_list("day", flat=True).first()


def market_day_series(*, start: dt.date, end: dt.date) -> list[MarketSeries]:
    """Every market with rows between ``start`` and ``end`` (inclusive), by subject."""
    days = [start + dt.timedelta(days=n) for n in range((end - start).days + 1)]
    rows = (
        MarketDay.objects.filter(day__gte=start, day__lte=end)
        .select_related("market")
        .order_by("market__subject", "day")
    )
    by_market: dict[int, tuple[Market, dict[dt.date, MarketDay]]] = {}
    for row in rows:
        by_market.setdefault(row.market_id, (row.market, {}))[1][row.day] = row
    return [
        MarketSeries(market=market, days=days, rows=[found.get(d) for d in days])
        for market, found in by_market.values()
    ]


@dataclass(frozen=True)
class PublicMarketDay:
    """The figures of one market and UTC day that anyone may see (SPEC 5.6).

    Every one is an aggregate over the day's trades, offers, bids and best values, which
    are public one by one (trade prices, each open offer's best value and bid count); no
    bid's constraint and no party's name goes into a ``MarketDay`` row, and only these
    columns are read from it. See ``docs/spark.md`` for the definitions.
    """

    day: dt.date
    trades: int
    volume: Decimal
    vwap: Decimal | None
    open: Decimal | None
    high: Decimal | None
    low: Decimal | None
    close: Decimal | None
    offers_posted: int
    offers_sold: int
    offers_unsold: int
    bids_posted: int
    offers_matched: int
    match_rate: float | None
    first_match_median_seconds: float | None
    best_value_offers: int
    best_value_high: Decimal | None
    best_value_low: Decimal | None
    best_value_spread: Decimal | None


PUBLIC_FIELDS = tuple(f.name for f in fields(PublicMarketDay))


def market_public_days(*, market: Market, limit: int = 30) -> list[PublicMarketDay]:
    """The market's last ``limit`` computed days, oldest first (one query)."""
    rows = MarketDay.objects.filter(market=market).order_by("-day").values(*PUBLIC_FIELDS)[:limit]
    return [PublicMarketDay(**row) for row in list(rows)[::-1]]
