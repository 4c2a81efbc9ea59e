"""Reads for the market pages: the subject tree, a market's open offers, trades and candles."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Q

from exchange.models import Market, Offer, Trade
from exchange.selectors.markets import market_list
from exchange.selectors.orders import offer_list, trade_list
from matching.subjects import SubjectPattern

CANDLE_INTERVALS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400)
MAX_CANDLES = 60
# The widths the market chart offers besides the automatic one: 1 minute, 1 hour, 1 day.
CANDLE_WIDTHS = (60, 3600, 86400)
# The most candles of one width the page embeds: the latest ones (issue 37). 2,000 trades a
# minute apart would otherwise put 2,000 one-minute candles into every market page; 240 is
# four hours of minutes, ten days of hours, eight months of days.
EMBEDDED_CANDLES = 240


@dataclass
class SubjectNode:
    """One token of the subject tree; ``market`` is set where a market has this subject;
    ``matched`` where that market's subject matches the highlighted pattern."""

    token: str
    path: str
    market: Market | None = None
    children: list[SubjectNode] = field(default_factory=list)
    matched: bool = False


def market_tree(*, query: str = "", highlight: SubjectPattern | None = None) -> list[SubjectNode]:
    """Markets arranged by their dot-separated subjects, optionally filtered by a search text
    (matched against subject, title and description; every word must match), with the
    markets whose subject matches ``highlight`` marked ``matched``."""
    markets = market_list()
    for word in query.split()[:8]:
        markets = markets.filter(
            Q(subject__icontains=word) | Q(title__icontains=word) | Q(description__icontains=word)
        )
    roots: list[SubjectNode] = []
    index: dict[str, SubjectNode] = {}
    for market in markets:
        siblings, path = roots, ""
        for token in market.subject.split("."):
            path = f"{path}.{token}" if path else token
            node = index.get(path)
            if node is None:
                node = index[path] = SubjectNode(token=token, path=path)
                siblings.append(node)
            siblings = node.children
        node = index[market.subject]
        node.market = market
        node.matched = highlight is not None and highlight.matches(market.subject)
    return roots


def market_get(*, subject: str) -> Market | None:
    return market_list().filter(subject=subject).first()


def market_open_offers(*, market: Market, limit: int = 200) -> list[Offer]:
    return list(offer_list(market=market.subject, state=Offer.State.OPEN)[:limit])


def market_recent_trades(*, market: Market, limit: int = 50) -> list[Trade]:
    return list(trade_list(user=AnonymousUser(), market=market.subject)[:limit])


def market_candles(*, market: Market, limit: int = 2000) -> dict[str, Any]:
    """OHLC candles and volume of the market's last ``limit`` trades, for the price chart:
    at the automatic width (``interval``, ``label``, ``candles``: the smallest of
    ``CANDLE_INTERVALS`` that shows the traded span in at most ``MAX_CANDLES`` candles) and
    at each of the chart's fixed widths (``widths``: ``{"60": {"interval": 60, "label":
    "1 min", "candles": [...]}, ...}``, keyed by ``CANDLE_WIDTHS`` as strings, as JSON has
    them). Each width keeps its latest ``EMBEDDED_CANDLES`` candles (``dropped`` says how
    many earlier ones it left out); the first kept one still opens at the close before it.
    """
    rows = list(
        Trade.objects.filter(market=market)
        .order_by("-closed_at", "-id")
        .values_list("closed_at", "price", "quantity")[:limit]
    )
    rows.reverse()
    interval = 60
    if rows:
        span = (rows[-1][0] - rows[0][0]).total_seconds()
        interval = next(
            (i for i in CANDLE_INTERVALS if span / i <= MAX_CANDLES), CANDLE_INTERVALS[-1]
        )
    return {
        **_candle_set(rows, interval),
        "widths": {str(width): _candle_set(rows, width) for width in CANDLE_WIDTHS},
    }


def _candle_set(rows: list[Any], interval: int) -> dict[str, Any]:
    candles = candles_of(rows, interval)
    dropped = max(0, len(candles) - EMBEDDED_CANDLES)
    return {
        "interval": interval,
        "label": width_label(interval),
        "candles": candles[dropped:],
        "dropped": dropped,
    }


def width_label(seconds: int) -> str:
    """A candle width as the chart names it: ``5 s``, ``15 min``, ``4 h``, ``1 day``."""
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if unit == 'day' and count > 1 else ''}"
    return f"{seconds} s"


def candles_of(
    rows: list[tuple[dt.datetime, Decimal, Decimal | None]], interval: int
) -> list[dict[str, Any]]:
    """Candles ``interval`` seconds wide of trades ``(closed_at, price, quantity)`` in time
    order: a candle per bucket that has trades, buckets starting at whole multiples of
    ``interval`` in Unix time (so a day runs from midnight to midnight UTC).

    Each candle opens at the previous candle's close: trades are sparse, and a lone trade
    still shows which way the price moved. Times are Unix seconds; prices and volumes are
    floats for the chart only (the tables show the exact decimals).
    """
    candles: list[dict[str, Any]] = []
    for closed_at, price, quantity in rows:
        bucket = int(closed_at.timestamp()) // interval * interval
        value = float(price)
        volume = float(quantity or 0)
        if candles and candles[-1]["time"] == bucket:
            c = candles[-1]
            c["high"], c["low"], c["close"] = max(c["high"], value), min(c["low"], value), value
            c["volume"] += volume
            c["trades"] += 1
        else:
            start = candles[-1]["close"] if candles else value
            candles.append(
                {
                    "time": bucket,
                    "open": start,
                    "high": max(start, value),
                    "low": min(start, value),
                    "close": value,
                    "volume": volume,
                    "trades": 1,
                }
            )
    return candles
