"""The market chart's candles at 1 minute, 1 hour and 1 day (issue 22): exact OHLC and volume
of a handful of trades placed on the edges of minutes, hours and days (UTC), and the page's
chart data carrying every width."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from exchange.models import Trade
from exchange.selectors.ui import market_candles
from exchange.selectors.ui.market_page import EMBEDDED_CANDLES, candles_of, width_label
from tests.browser.test_market_daily import json_script
from tests.spark.test_analytics import Day

UTC = dt.UTC
EVE = dt.datetime(2026, 3, 10, tzinfo=UTC)  # the day before the edge, midnight UTC
MIDNIGHT = dt.datetime(2026, 3, 11, tzinfo=UTC)


def ts(when: dt.datetime) -> int:
    return int(when.timestamp())


def at(hh: int, mm: int, ss: float = 0) -> dt.datetime:
    """A time on the 11th (negative ``hh`` counts back into the 10th)."""
    return MIDNIGHT + dt.timedelta(hours=hh, minutes=mm, seconds=ss)


# (closed_at, price, quantity): the last second of the 10th, the first instant of the 11th
# (a minute, an hour and a day begin), the minute's last second, the next minute, the hour's
# last second, the next hour (a trade without a quantity).
TRADES = [
    (at(0, 0, -0.5), Decimal("1.00"), Decimal("100")),
    (at(0, 0), Decimal("1.10"), Decimal("200")),
    (at(0, 0, 59), Decimal("0.90"), Decimal("50")),
    (at(0, 1), Decimal("1.05"), Decimal("300")),
    (at(0, 59, 59), Decimal("1.20"), Decimal("10")),
    (at(1, 0), Decimal("1.15"), None),
]


def candle(time: int, o: float, h: float, lo: float, c: float, v: float, n: int) -> dict:
    return {"time": time, "open": o, "high": h, "low": lo, "close": c, "volume": v, "trades": n}


def test_one_minute_candles_split_at_each_minute():
    assert candles_of(TRADES, 60) == [
        candle(ts(at(0, 0)) - 60, 1.00, 1.00, 1.00, 1.00, 100.0, 1),
        # opens at the previous close: the lone 1.00 of 23:59 is where 00:00 starts from
        candle(ts(at(0, 0)), 1.00, 1.10, 0.90, 0.90, 250.0, 2),
        candle(ts(at(0, 1)), 0.90, 1.05, 0.90, 1.05, 300.0, 1),
        candle(ts(at(0, 59)), 1.05, 1.20, 1.05, 1.20, 10.0, 1),
        candle(ts(at(1, 0)), 1.20, 1.20, 1.15, 1.15, 0.0, 1),
    ]


def test_one_hour_candles_split_at_each_hour():
    assert candles_of(TRADES, 3600) == [
        candle(ts(at(-1, 0)), 1.00, 1.00, 1.00, 1.00, 100.0, 1),
        candle(ts(at(0, 0)), 1.00, 1.20, 0.90, 1.20, 560.0, 4),
        candle(ts(at(1, 0)), 1.20, 1.20, 1.15, 1.15, 0.0, 1),
    ]


def test_one_day_candles_split_at_midnight_utc():
    assert candles_of(TRADES, 86400) == [
        candle(ts(EVE), 1.00, 1.00, 1.00, 1.00, 100.0, 1),
        candle(ts(MIDNIGHT), 1.00, 1.20, 0.90, 1.15, 560.0, 5),
    ]


def test_a_day_is_a_utc_day_whatever_the_trades_time_zone():
    """23:30 in New York on the 10th is 04:30 UTC on the 11th: the 11th's candle."""
    new_york = dt.timezone(dt.timedelta(hours=-5))
    late = dt.datetime(2026, 3, 10, 23, 30, tzinfo=new_york)

    assert [c["time"] for c in candles_of([(late, Decimal("2"), Decimal("1"))], 86400)] == [
        ts(MIDNIGHT)
    ]


def test_no_trades_no_candles():
    assert candles_of([], 60) == []


@pytest.mark.parametrize(
    ("seconds", "label"),
    [(1, "1 s"), (15, "15 s"), (60, "1 min"), (900, "15 min"), (3600, "1 h")]
    + [(4 * 3600, "4 h"), (86400, "1 day"), (7 * 86400, "7 days"), (90, "90 s")],
)
def test_width_labels(seconds, label):
    assert width_label(seconds) == label


def pencils_traded() -> Any:
    """Pencils with TRADES closed (through the ORM, with their times)."""
    day = Day()
    market = day.market("office.supplies.pencils", EVE)
    for closed_at, price, quantity in TRADES:
        offer = day.offer(market, EVE, state="closed")
        bid = day.bid(market, EVE, state="filled")
        day.trade(offer, bid, str(price), None if quantity is None else str(quantity), closed_at)
    return market


@pytest.fixture
def traded(db: Any) -> Any:
    return pencils_traded()


def test_the_market_chart_carries_every_width(traded, client):
    # When anyone opens the market page
    response = client.get(f"/markets/{traded.subject}/")

    # Then the chart's data has the automatic width (a span of 1 h 0.5 s in at most 60
    # candles: 5 minutes) and each of the three widths, exactly as candles_of computes them
    assert response.status_code == 200
    chart = json_script(response.content.decode(), "candles-data")
    assert chart == {
        "interval": 300,
        "label": "5 min",
        "candles": candles_of(TRADES, 300),
        "dropped": 0,
        "precision": 2,
        "widths": {
            "60": {"interval": 60, "label": "1 min", "candles": candles_of(TRADES, 60)}
            | {"dropped": 0},
            "3600": {"interval": 3600, "label": "1 h", "candles": candles_of(TRADES, 3600)}
            | {"dropped": 0},
            "86400": {"interval": 86400, "label": "1 day", "candles": candles_of(TRADES, 86400)}
            | {"dropped": 0},
        },
    }
    # and one button per width, the automatic one pressed
    page = response.content.decode()
    assert page.count('aria-controls="price-chart"') == 4
    assert 'data-candle-width="3600" aria-controls="price-chart" aria-pressed="false">1 h<' in page
    assert '<span data-candle-summary="price-chart">4 candles of 5 min</span>' in page


def test_the_automatic_width_follows_the_traded_span(traded):
    """Without the 10th's trade the trades span exactly an hour: 60 one-minute candles."""
    assert market_candles(market=traded)["interval"] == 300
    Trade.objects.filter(market=traded, closed_at__lt=MIDNIGHT).delete()

    chart = market_candles(market=traded)

    assert (chart["interval"], chart["label"]) == (60, "1 min")
    assert chart["candles"] == chart["widths"]["60"]["candles"] == candles_of(TRADES[1:], 60)


def test_each_width_embeds_its_latest_candles_only(db):
    """300 trades a minute apart: 300 one-minute candles, of which the page embeds the
    latest EMBEDDED_CANDLES, the first of them opening at the close of the one before."""
    day = Day()
    market = day.market("office.supplies.pencils", EVE)
    trades = [(at(0, i), Decimal(100 + i) / 100, Decimal(10)) for i in range(300)]
    for closed_at, price, quantity in trades:
        offer = day.offer(market, EVE, state="closed")
        bid = day.bid(market, EVE, state="filled")
        day.trade(offer, bid, str(price), str(quantity), closed_at)

    chart = market_candles(market=market)

    every = candles_of(trades, 60)
    assert len(every) == 300 and EMBEDDED_CANDLES == 240
    assert chart["widths"]["60"]["candles"] == every[60:]
    assert chart["widths"]["60"]["dropped"] == 60
    assert chart["widths"]["60"]["candles"][0]["open"] == every[59]["close"] == 1.59
    # the wider widths hold the span in few candles and drop none
    assert chart["widths"]["3600"]["dropped"] == chart["widths"]["86400"]["dropped"] == 0
    assert chart["dropped"] == 0 and len(chart["candles"]) <= 61
