"""Reading the nightly analytics for the staff page."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

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
