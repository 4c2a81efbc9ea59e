"""The staff analytics page: the nightly ``MarketDay`` figures as server-drawn SVG charts."""

from __future__ import annotations

import datetime as dt

from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from exchange.analytics.charts import match_rate_chart, price_chart, trades_chart
from exchange.analytics.selectors import latest_analytics_day, market_day_series
from exchange.analytics.services import yesterday

DEFAULT_DAYS = 30
MAX_DAYS = 366


def _days(text: str | None) -> int:
    try:
        return min(MAX_DAYS, max(1, int(text or DEFAULT_DAYS)))
    except ValueError:
        return DEFAULT_DAYS


def _end(text: str | None) -> dt.date:
    if text:
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            pass
    return latest_analytics_day() or yesterday()


@staff_member_required
@require_GET
def analytics_dashboard(request):
    days = _days(request.GET.get("days"))
    end = _end(request.GET.get("end"))
    # An end in the calendar's first days has its window cut there (``0001-01-01`` less a
    # day does not exist: an OverflowError, a 500, before)
    start = dt.date.fromordinal(max(1, end.toordinal() - (days - 1)))
    markets = []
    for series in market_day_series(start=start, end=end):
        subject = series.market.subject
        markets.append(
            {
                "market": series.market,
                "latest": series.latest,
                "trades_chart": trades_chart(
                    series.days, series.rows, label=f"Trades per day in {subject}"
                ),
                "price_chart": price_chart(
                    series.days, series.rows, label=f"Daily prices in {subject}"
                ),
                "match_rate_chart": match_rate_chart(
                    series.days, series.rows, label=f"Match rate in {subject}"
                ),
            }
        )
    context = {
        "title": "Market analytics",
        "markets": markets,
        "start": start,
        "end": end,
        "days": days,
    }
    return render(request, "analytics/dashboard.html", context)
