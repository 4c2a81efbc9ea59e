"""A subscription's notification finds its owner on a page other than /alerts/ (issue 39):
on the market page at 1366 px, in real headless Chromium against the live stack (uvicorn,
the Celery workers, Redis), a toast in the feed row's words (the event's time, the market,
units) and a badge on "Alerts and feeds", gone once /alerts/ is opened; the account page's
list takes it too."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from exchange.services.subscriptions import subscription_create
from tests.factories import UserFactory

from .conftest import login, off_loop, screenshot
from .test_alerts_ui import BIDS, place_bid
from .test_trading_ui import SUBJECT, pencils

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

ROW = re.compile(
    r"^my bids: #1 · [A-Z][a-z]{2} \d{1,2}, \d\d:\d\d:\d\d UTC · Pencils · bid \d+ · limit 1\.01 EUR$"
)


def test_a_notification_is_a_toast_and_a_badge_on_the_market_page(new_page, live_stack):
    market = off_loop(pencils)
    alice = UserFactory(username="alice")
    sub = off_loop(subscription_create, owner=alice, query=BIDS, name="my bids")
    page = new_page(width=1366, height=900)
    login(page, "alice")
    page.goto(f"/markets/{SUBJECT}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    badge = page.locator("#alerts-unread")
    expect(badge).to_be_hidden()

    # A bid of hers is notified by her subscription: a toast and the badge, on this page
    place_bid(alice, market, "1.01")
    toast = page.locator(f".toast[data-alert='{sub.pk}'][data-n='1']")
    expect(toast).to_be_visible()
    expect(toast.locator("p")).to_have_text(ROW)
    expect(badge).to_be_visible()
    expect(badge).to_have_text("1")
    expect(badge).to_have_attribute("aria-label", "1 new alert notification")
    box = badge.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1366
    screenshot(page, "alert-toast-market-1366", full_page=False)

    # A second one counts on; each toast once
    place_bid(alice, market, "1.02")
    expect(page.locator(f".toast[data-alert='{sub.pk}'][data-n='2']")).to_be_visible()
    expect(badge).to_have_text("2")
    expect(page.locator(f".toast[data-alert='{sub.pk}']")).to_have_count(2)

    # The account page lists them; opening Alerts and feeds reads them: the badge goes
    page.goto("/account/")
    expect(page.locator("#alert-notes-list > li")).to_have_count(2)
    expect(page.locator("#alert-notes-list > li").first).to_contain_text("limit 1.02 EUR")
    expect(badge).to_have_text("2")
    page.get_by_role("link", name=re.compile("Alerts and feeds")).click()
    expect(page).to_have_url(re.compile(r"/alerts/$"))
    expect(badge).to_be_hidden()
    page.goto(f"/markets/{SUBJECT}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(badge).to_be_hidden()
