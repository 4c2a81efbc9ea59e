"""The staff analytics page: MarketDay rows drawn as inline SVG, for staff only (no Spark)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from exchange.analytics.charts import match_rate_chart, price_chart, trades_chart
from tests.factories import StaffFactory, UserFactory, pencils_market
from tests.spark.market_days import market_day

DAY = dt.date(2026, 3, 10)


def test_staff_see_charts_of_every_market_with_rows(client: Any, db: Any) -> None:
    # Given two days of figures for pencils, one of them without trades
    pencils = pencils_market()
    market_day(
        pencils,
        DAY - dt.timedelta(days=1),
        trades=0,
        volume=0,
        notional=0,
        vwap=None,
        open=None,
        high=None,
        low=None,
        close=None,
        offers_sold=0,
    )
    market_day(pencils, DAY)
    client.force_login(StaffFactory())

    # When staff open the page for the week ending on DAY
    response = client.get("/staff/analytics/", {"end": DAY.isoformat(), "days": "7"})

    # Then it shows the market's latest figures and three charts drawn as SVG
    assert response.status_code == 200
    page = response.content.decode()
    assert "office.supplies.pencils" in page
    assert "2026-03-04 to 2026-03-10" in page
    assert page.count('class="analytics-chart"') == 3
    assert "75% (3 of 4)" in page
    assert "12.5 s" in page
    assert "1 / 1.1 / 0.95 / 1.05" in page
    assert "0.3 (high 1.2, low 0.9, 2 offers" in page
    assert len(re.findall(r'<rect [^>]*class="bar"', page)) == 1  # one day with trades
    assert page.count('<g class="candle up">') == 1
    # No chart library and nothing from another host: only the admin's own scripts
    assert all(
        src.startswith("/static/admin/") for src in re.findall(r'<script[^>]*src="([^"]+)"', page)
    )
    assert "https://" not in page


def test_the_page_defaults_to_the_latest_computed_day(client: Any, db: Any) -> None:
    market_day(pencils_market(), DAY)
    client.force_login(StaffFactory())

    page = client.get("/staff/analytics/", {"days": "nonsense"}).content.decode()

    assert "2026-02-09 to 2026-03-10" in page  # 30 days ending on the latest row


def test_the_page_is_for_staff_only(client: Any, db: Any) -> None:
    anonymous = client.get("/staff/analytics/")
    client.force_login(UserFactory())
    trader = client.get("/staff/analytics/")

    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/admin/login/")
    assert trader.status_code == 302 and trader["Location"].startswith("/admin/login/")


def test_chart_text_is_escaped() -> None:
    days = [DAY]
    for chart in (trades_chart, price_chart, match_rate_chart):
        svg = chart(days, [None], label='<script>alert("x")</script>')
        assert "<script>" not in svg
        assert "&lt;script&gt;" in svg
