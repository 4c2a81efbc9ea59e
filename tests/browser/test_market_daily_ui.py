"""The market page's daily charts in real headless Chromium, against the live stack."""

from __future__ import annotations

import datetime as dt

import pytest
from playwright.sync_api import expect

from tests.factories import pencils_market
from tests.spark.market_days import market_day

from .conftest import off_loop, screenshot
from .test_market_daily import DAY, NO_TRADES

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def test_daily_charts_render_on_the_market_page(new_page, live_stack):
    # Given pencils with three computed days (one without trades) and pens with none
    pencils = off_loop(pencils_market)
    off_loop(pencils_market, subject="office.supplies.pens")
    market_day(pencils, DAY - dt.timedelta(days=2))
    market_day(pencils, DAY - dt.timedelta(days=1), **NO_TRADES)
    market_day(pencils, DAY, match_rate=0.5, offers_matched=2)

    # When anyone opens the pencils page
    page = new_page()
    page.goto(f"/markets/{pencils.subject}/")

    # Then the three charts are drawn by lightweight-charts: two daily candles, five count
    # lines of three days, a match rate and a time to first match on the two days with offers
    price = page.locator('[data-source="daily-price-data"]')
    activity = page.locator('[data-source="daily-activity-data"]')
    matching = page.locator('[data-source="daily-matching-data"]')
    expect(price).to_have_attribute("data-drawn", "2")
    expect(activity).to_have_attribute("data-drawn", "15")
    expect(matching).to_have_attribute("data-drawn", "4")
    for chart in (price, activity, matching):
        expect(chart.locator("canvas").first).to_be_visible()
        box = chart.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 150
    expect(price).to_have_attribute("role", "img")

    # and the table behind "The figures as a table" says the same in text
    table = page.locator("details.daily-table table")
    expect(table).to_be_hidden()
    page.get_by_text("The figures as a table").click()
    expect(table).to_be_visible()
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table.locator("tbody tr").last).to_contain_text("1.00 / 1.10 / 0.95 / 1.05")
    expect(table.locator("tbody tr").first).to_contain_text("50%")
    screenshot(page, "market-daily")
    assert new_page.errors == []

    # A market without computed days says so, with no chart
    page.goto("/markets/office.supplies.pens/")
    expect(page.locator("#daily")).to_contain_text("No daily figures yet.")
    expect(page.locator("#daily [data-chart]")).to_have_count(0)

    # The section fits a phone
    phone = new_page(width=390, height=844)
    phone.goto(f"/markets/{pencils.subject}/")
    expect(phone.locator('[data-source="daily-matching-data"]')).to_have_attribute(
        "data-drawn", "4"
    )
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    assert new_page.errors == []
