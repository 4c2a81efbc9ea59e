"""A market's daily figures (the nightly Spark analytics, SPEC 7) as its market page shows
them: data for three charts drawn by ``static/frontend/charts.js`` and rows for the table
that says the same in text.

Only ``PublicMarketDay`` fields come in (SPEC 5.6 is applied by that selector). Chart values
are floats, for drawing only; the table shows the decimals as the market writes prices.
Days are ``YYYY-MM-DD`` strings, which the chart library takes as calendar days (no time of
day, no time zone).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from operator import attrgetter
from typing import Any

from exchange.analytics.selectors import PublicMarketDay
from exchange.models import Market
from exchange.numbers import grouped_text, price_quantum, price_text

# Colours of the lines, also used by the legends beside the charts.
COUNT_SERIES = (
    ("trades", "Trades", "#2563eb"),
    ("offers_posted", "Offers posted", "#7c3aed"),
    ("offers_sold", "Offers sold", "#15803d"),
    ("offers_unsold", "Offers unsold", "#b91c1c"),
    ("bids_posted", "Bids posted", "#d97706"),
)
MATCH_RATE_COLOR = "#2563eb"
FIRST_MATCH_COLOR = "#d97706"
VWAP_COLOR = "#d97706"


def _f(value: Decimal | float | int | None) -> float | None:
    return None if value is None else float(value)


def _points(
    days: Sequence[PublicMarketDay], get: Callable[[PublicMarketDay], Any]
) -> list[dict[str, Any]]:
    """``{time, value}`` for the days where ``get`` has a value (a gap elsewhere)."""
    return [
        {"time": d.day.isoformat(), "value": float(v)} for d in days if (v := get(d)) is not None
    ]


def _price_chart(days: Sequence[PublicMarketDay], precision: int) -> dict[str, Any]:
    """Candles of the days with trades, with the VWAP and volume (the trade-chart shape)."""
    return {
        "interval": 86_400,
        "precision": precision,
        "vwap_color": VWAP_COLOR,
        "candles": [
            {
                "time": d.day.isoformat(),
                "open": _f(d.open),
                "high": _f(d.high),
                "low": _f(d.low),
                "close": _f(d.close),
                "vwap": _f(d.vwap),
                "volume": float(d.volume),
                "trades": d.trades,
            }
            for d in days
            if d.trades and d.open is not None
        ],
    }


def _activity_chart(days: Sequence[PublicMarketDay]) -> dict[str, Any]:
    return {
        "series": [
            {
                "key": key,
                "label": label,
                "color": color,
                "scale": "right",
                "unit": "",
                "precision": 0,
                "points": _points(days, attrgetter(key)),
            }
            for key, label, color in COUNT_SERIES
        ]
    }


def _matching_chart(days: Sequence[PublicMarketDay]) -> dict[str, Any]:
    return {
        "series": [
            {
                "key": "match_rate",
                "label": "Match rate, %",
                "color": MATCH_RATE_COLOR,
                "scale": "right",
                "unit": "%",
                "precision": 0,
                "points": _points(
                    days, lambda d: None if d.match_rate is None else d.match_rate * 100
                ),
            },
            {
                "key": "first_match_median_seconds",
                "label": "Median time to first match, s",
                "color": FIRST_MATCH_COLOR,
                "scale": "left",
                "unit": " s",
                "precision": 1,
                "points": _points(days, lambda d: d.first_match_median_seconds),
            },
        ]
    }


def _row(d: PublicMarketDay, market: Market) -> dict[str, Any]:
    tick = market.tick
    fine = price_quantum(tick).scaleb(-2)  # the VWAP with two places more than prices
    return {
        "day": d.day,
        "trades": d.trades,
        "volume": grouped_text(d.volume),
        "vwap": None if d.vwap is None else format(d.vwap.quantize(fine), "f"),
        "ohlc": (
            None
            if d.open is None
            else " / ".join(price_text(v, tick) or "" for v in (d.open, d.high, d.low, d.close))
        ),
        "offers_posted": d.offers_posted,
        "offers_sold": d.offers_sold,
        "offers_unsold": d.offers_unsold,
        "bids_posted": d.bids_posted,
        "offers_matched": d.offers_matched,
        "match_rate": None if d.match_rate is None else f"{d.match_rate:.0%}",
        "first_match": (
            None
            if d.first_match_median_seconds is None
            else f"{d.first_match_median_seconds:.1f} s"
        ),
        "spread": price_text(d.best_value_spread, tick),
        "best_value_offers": d.best_value_offers,
    }


def daily_figures(days: Sequence[PublicMarketDay], *, market: Market, precision: int) -> dict:
    """What the market page's *Day by day* section shows; ``days`` oldest first."""
    if not days:
        return {"days": [], "latest": None}
    return {
        "days": [_row(d, market) for d in reversed(days)],  # the table: newest first
        "first": days[0].day,
        "latest": days[-1].day,
        "price": _price_chart(days, precision),
        "activity": _activity_chart(days),
        "matching": _matching_chart(days),
    }
