"""The market chart's candle widths in real headless Chromium: the buttons redraw the chart
in place at 1 minute, 1 hour and 1 day and back to the automatic width, without a reload,
and a chosen width stays chosen when a live trade redraws the chart."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from exchange.services.closing import offer_close
from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory
from tests.frontend.test_candles import pencils_traded

from .conftest import off_loop, screenshot

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def test_the_width_buttons_switch_the_chart_without_reload(new_page, live_stack):
    # Given pencils with six trades around midnight UTC (tests/frontend/test_candles.py)
    pencils = off_loop(pencils_traded)

    # When anyone opens the market page, the chart shows the automatic width
    page = new_page()
    page.goto(f"/markets/{pencils.subject}/")
    chart = page.locator("#price-chart")
    summary = page.locator('[data-candle-summary="price-chart"]')
    widths = page.get_by_role("group", name="Candle width")
    expect(chart).to_have_attribute("data-drawn", "4")
    expect(summary).to_have_text("4 candles of 5 min")
    expect(widths.get_by_role("button", name="Auto")).to_have_attribute("aria-pressed", "true")
    page.evaluate("window.sameDocument = true")

    # Then each width button redraws the chart with that width's candles, says so, and
    # is the one pressed
    for name, drawn, text in [
        ("1 min", "5", "5 candles of 1 min"),
        ("1 h", "3", "3 candles of 1 h"),
        ("1 day", "2", "2 candles of 1 day"),
        ("Auto", "4", "4 candles of 5 min"),
    ]:
        widths.get_by_role("button", name=name, exact=True).click()
        expect(chart).to_have_attribute("data-drawn", drawn)
        expect(summary).to_have_text(text)
        pressed = widths.locator('[aria-pressed="true"]')
        expect(pressed).to_have_count(1)
        expect(pressed).to_have_text(name)
        expect(chart.locator("canvas").first).to_be_visible()

    # When the day width is chosen and a trade closes now, the chart is redrawn live at
    # that width: a third day
    widths.get_by_role("button", name="1 day", exact=True).click()
    expect(chart).to_have_attribute("data-drawn", "2")
    off_loop(trade_now, pencils)
    expect(summary).to_have_text("3 candles of 1 day")
    expect(chart).to_have_attribute("data-drawn", "3")
    expect(widths.locator('[aria-pressed="true"]')).to_have_text("1 day")
    screenshot(page, "market-candle-widths", full_page=False)

    # and the page was never reloaded
    assert page.evaluate("window.sameDocument") is True
    assert new_page.errors == []


def trade_now(market) -> None:
    """An auction closed through the services (a trade at 1.00 now)."""
    staff = StaffFactory()
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 500 AND price >= 0.80"
    )
    bid_place(buyer=UserFactory(), market=market, constraint="lot = 500 AND price <= 1.00")
    offer_close(offer_id=offer.pk, staff=staff)
