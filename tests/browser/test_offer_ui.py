"""An offer's page as its seller watches it (issue 22, item 3), in real headless Chromium
against the live stack: the deadline counts down, matching bids show in the depth view with
their quantities and totals as they arrive, and when the auction closes the page turns into
its outcome (price, quantity, total, buyer) with no live field left, all without a reload.

Nothing waits on the clock: each step waits for what a person would see."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from exchange.services.closing import offer_close
from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory

from .conftest import login, off_loop, screenshot
from .test_trading_ui import pencils

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def test_seller_watches_depth_countdown_and_outcome(new_page, live_stack):
    market = off_loop(pencils)
    seller = UserFactory(username="sally")
    ann, ben = UserFactory(username="ann"), UserFactory(username="ben")
    closes = timezone.now() + dt.timedelta(hours=1)
    offer = off_loop(
        offer_publish,
        seller=seller,
        market=market,
        constraint="lot BETWEEN 1000 AND 10000 AND price >= 1.00",
        closes_at=closes,
    )
    page = new_page()
    login(page, "sally")
    page.goto(f"/offers/{offer.pk}/")
    page.evaluate("window.notReloaded = true")

    # The deadline counts down (the clock time stays in the tooltip)
    countdown = page.locator("time[data-countdown]")
    expect(countdown).to_have_text(re.compile(r"^in (59|60) min \d\d s$"))
    first = countdown.text_content()
    expect(countdown).not_to_have_text(first)
    expect(countdown).to_have_attribute("title", re.compile(r"UTC$"))

    # Bids arrive: the depth shows each one's value, quantity and total, best first
    depth = page.locator("#depth")
    expect(depth).to_contain_text("No bid matches this offer yet.")
    off_loop(
        bid_place,
        buyer=ben,
        market=market,
        constraint="lot BETWEEN 9000 AND 10000 AND price <= 1.15",
    )
    expect(depth.locator('[data-depth="1"]')).to_have_text(
        re.compile(r"1\s*1.15\s*10,000\s*11,500.00")
    )
    off_loop(bid_place, buyer=ann, market=market, constraint="lot = 8000 AND price <= 1.18")
    expect(depth.locator('[data-depth="1"]')).to_have_text(
        re.compile(r"1\s*1.18\s*8,000\s*9,440.00")
    )
    expect(depth.locator('[data-depth="2"]')).to_have_text(
        re.compile(r"2\s*1.15\s*10,000\s*11,500.00")
    )
    expect(page.locator(f'[data-best-value="{offer.pk}"]')).to_have_text("1.18")
    expect(depth).not_to_contain_text("ann")
    screenshot(page, "offer-depth")

    # Staff close it: the page shows the outcome and no live field, without a reload
    off_loop(offer_close, offer_id=offer.pk, staff=StaffFactory())
    stats = page.locator("#offer-stats")
    expect(stats.locator("[data-outcome]")).to_have_text("Sold to ann")
    expect(stats).to_contain_text("1.18 EUR")
    expect(stats).to_contain_text("8,000 pencils")
    expect(stats.locator("[data-total]")).to_have_text("9,440.00 EUR")
    expect(page.locator("[data-best-value]")).to_have_count(0)
    expect(page.locator("time[data-countdown]")).to_have_count(0)
    expect(page.locator("#offer-state")).to_have_text("Closed")
    assert page.evaluate("window.notReloaded") is True
    screenshot(page, "offer-sold")
    assert new_page.errors == []
