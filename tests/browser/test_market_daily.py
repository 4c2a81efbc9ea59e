"""The market page's *Day by day* section: the nightly figures (MarketDay rows) as chart data
and a table, public figures only (Django's test client; the browser test draws them)."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

import pytest

from exchange.analytics.selectors import PUBLIC_FIELDS
from exchange.models import MarketDay
from tests.factories import UserFactory, pencils_market
from tests.spark.market_days import QUIET, market_day

DAY = dt.date(2026, 3, 10)
NO_TRADES = {**QUIET, "offers_unsold": 3, "bids_posted": 1}


def json_script(page: str, element_id: str) -> Any:
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', page)
    assert found, element_id
    return json.loads(found.group(1))


@pytest.fixture
def three_days(db: Any) -> Any:
    """Pencils with three computed days: a day with trades, a quiet day, another with trades
    (and another market's row, which must not show)."""
    pencils = pencils_market()
    market_day(pencils, DAY - dt.timedelta(days=2))
    market_day(pencils, DAY - dt.timedelta(days=1), **NO_TRADES)
    market_day(
        pencils,
        DAY,
        trades=1,
        volume=Decimal("5000"),
        notional=Decimal("4750"),
        vwap=Decimal("0.95"),
        open=Decimal("0.95"),
        high=Decimal("0.95"),
        low=Decimal("0.95"),
        close=Decimal("0.95"),
        offers_posted=2,
        offers_sold=1,
        offers_unsold=0,
        bids_posted=7,
        offers_matched=1,
        match_rate=0.5,
        first_match_median_seconds=3.0,
        best_value_offers=1,
        best_value_high=Decimal("1.01"),
        best_value_low=Decimal("1.01"),
        best_value_spread=Decimal("0"),
    )
    market_day(pencils_market(subject="office.supplies.pens"), DAY, trades=9, volume=9)
    return pencils


def test_market_page_carries_exactly_the_daily_series(client: Any, three_days: Any) -> None:
    # When anyone opens the market page
    response = client.get(f"/markets/{three_days.subject}/")

    # Then its context and its JSON carry the three days' series, oldest first
    assert response.status_code == 200
    daily = response.context["daily"]
    page = response.content.decode()
    expected_price = {
        "interval": 86400,
        "precision": 2,
        "vwap_color": "#d97706",
        "candles": [
            {
                "time": "2026-03-08",
                "open": 1.0,
                "high": 1.1,
                "low": 0.95,
                "close": 1.05,
                "vwap": 1.0333333333,
                "volume": 300.0,
                "trades": 2,
            },
            {
                "time": "2026-03-10",
                "open": 0.95,
                "high": 0.95,
                "low": 0.95,
                "close": 0.95,
                "vwap": 0.95,
                "volume": 5000.0,
                "trades": 1,
            },
        ],
    }
    assert daily["price"] == expected_price
    assert json_script(page, "daily-price-data") == expected_price

    def points(*values: float | None) -> list[dict[str, Any]]:
        days = ("2026-03-08", "2026-03-09", "2026-03-10")
        return [{"time": t, "value": v} for t, v in zip(days, values, strict=True) if v is not None]

    activity = json_script(page, "daily-activity-data")
    assert activity == daily["activity"]
    assert {s["key"]: s["points"] for s in activity["series"]} == {
        "trades": points(2, 0, 1),
        "offers_posted": points(4, 0, 2),
        "offers_sold": points(2, 0, 1),
        "offers_unsold": points(1, 3, 0),
        "bids_posted": points(5, 1, 7),
    }
    matching = json_script(page, "daily-matching-data")
    assert matching == daily["matching"]
    assert {s["key"]: (s["scale"], s["points"]) for s in matching["series"]} == {
        "match_rate": ("right", points(75.0, None, 50.0)),
        "first_match_median_seconds": ("left", points(12.5, None, 3.0)),
    }

    # and the table says the same in text, newest day first
    assert [row["day"] for row in daily["days"]] == [DAY - dt.timedelta(days=n) for n in range(3)]
    newest, quiet, oldest = daily["days"]
    assert (oldest["volume"], oldest["vwap"], oldest["ohlc"]) == (
        "300",
        "1.0333",
        "1.00 / 1.10 / 0.95 / 1.05",
    )
    assert (oldest["match_rate"], oldest["first_match"], oldest["spread"]) == (
        "75%",
        "12.5 s",
        "0.30",
    )
    assert (quiet["vwap"], quiet["ohlc"], quiet["match_rate"], quiet["spread"]) == (None,) * 4
    assert (newest["volume"], newest["spread"]) == ("5,000", "0.00")
    table = page[page.index('<details class="daily-table">') :]
    assert "1.00 / 1.10 / 0.95 / 1.05" in table
    assert '75% <span class="muted">(3 of 4)</span>' in table
    assert (daily["first"], daily["latest"]) == (DAY - dt.timedelta(days=2), DAY)
    # Three charts, each labelled, drawn by charts.js from that JSON
    assert page.count('data-source="daily-') == 3
    assert 'data-chart="lines" data-source="daily-matching-data"' in page


def test_only_public_aggregates_reach_the_page(client: Any, three_days: Any) -> None:
    # Given the MarketDay columns, of which the page reads only the public ones
    assert set(PUBLIC_FIELDS) == {f.name for f in MarketDay._meta.fields} - {
        "id",
        "market",
        "notional",
        "computed_at",
    }
    client.force_login(UserFactory(username="someone"))
    page = client.get(f"/markets/{three_days.subject}/").content.decode()
    # The other market's figures (9 trades) are not on pencils' page
    price = json_script(page, "daily-price-data")
    assert [c["trades"] for c in price["candles"]] == [2, 1]
    activity = json_script(page, "daily-activity-data")
    assert all(p["value"] != 9 for s in activity["series"] for p in s["points"])


def test_a_market_without_computed_days_says_so(client: Any, db: Any) -> None:
    pencils = pencils_market()
    page = client.get(f"/markets/{pencils.subject}/").content.decode()
    assert "No daily figures yet." in page
    assert 'data-source="daily-' not in page
    assert 'id="daily-price-data"' not in page


def test_the_daily_section_shows_the_last_thirty_days(client: Any, db: Any) -> None:
    pencils = pencils_market()
    for n in range(35):
        market_day(pencils, DAY - dt.timedelta(days=n))
    daily = client.get(f"/markets/{pencils.subject}/").context["daily"]
    assert len(daily["days"]) == 30
    assert (daily["first"], daily["latest"]) == (DAY - dt.timedelta(days=29), DAY)
    assert len(daily["price"]["candles"]) == 30
