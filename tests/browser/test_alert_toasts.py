"""The alert journey (issue 39): an alert written and saved on /alerts/, then its
notification finding its owner on a page other than /alerts/, at 390 and 1366 px in real
headless Chromium against the live stack (uvicorn, the Celery workers, Redis): on the market
page a toast in the feed row's words (the event's time, the market, units) and a badge on
"Alerts and feeds"; the account page's list takes it too; /alerts/ shows the feed rows with
the time and units, and the badge goes."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from exchange.models import Subscription
from tests.factories import UserFactory

from .conftest import login, off_loop, screenshot
from .test_alerts_ui import BIDS, OVERFLOW_JS, place_bid
from .test_trading_ui import SUBJECT, pencils

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

ROW = re.compile(
    r"^my bids: #1 · [A-Z][a-z]{2} \d{1,2}, \d\d:\d\d:\d\d UTC · Pencils · bid \d+ · limit 1\.01 EUR$"
)


FEED_ROW = re.compile(
    r"^#(\d) [A-Z][a-z]{2} \d{1,2}, \d\d:\d\d:\d\d UTC Pencils bid \d+ limit 1\.0\1 EUR$"
)


def _fits(page, width: int) -> None:
    """Nothing sticks out sideways: the page, and every card's content."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.evaluate(OVERFLOW_JS) == []


@pytest.mark.parametrize("width", [390, 1366])
def test_an_alert_saved_on_alerts_is_a_toast_and_a_badge_on_the_market_page(
    new_page, live_stack, width
):
    market = off_loop(pencils)
    alice = UserFactory(username="alice")
    page = new_page(width=width, height=900)
    login(page, "alice")

    # She writes the alert on /alerts/ and saves it
    page.goto("/alerts/")
    page.get_by_label("Query").fill(BIDS)
    expect(page.locator("#alert-query-status .check-ok")).to_contain_text("Valid (events)")
    page.get_by_label("Name").fill("my bids")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(r"/alerts/#sub-\d+$"))
    sub = off_loop(Subscription.objects.get)
    assert (sub.owner_id, sub.name, sub.query) == (alice.pk, "my bids", BIDS)

    # On the market page, a bid of hers is notified: a toast and the badge, on this page
    page.goto(f"/markets/{SUBJECT}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    badge = page.locator("#alerts-unread")
    expect(badge).to_be_hidden()
    place_bid(alice, market, "1.01")
    toast = page.locator(f".toast[data-alert='{sub.pk}'][data-n='1']")
    expect(toast).to_be_visible()
    expect(toast.locator("p")).to_have_text(ROW)
    expect(badge).to_be_visible()
    expect(badge).to_have_text("1")
    expect(badge).to_have_attribute("aria-label", "1 new alert notification")
    for shown in (badge, toast):
        box = shown.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    _fits(page, width)
    phone = "-phone" if width == 390 else ""
    screenshot(page, f"alert-toast-market-{width}", docs=f"alert-toast{phone}", full_page=False)

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

    # Its feed: each row with the event's time, the market and the units, newest first
    rows = page.locator(f"#feed-{sub.pk} > li")
    expect(rows).to_have_count(2)
    for row, n in ((rows.nth(0), 2), (rows.nth(1), 1)):
        expect(row).to_have_attribute("data-n", str(n))
        expect(row).to_have_text(FEED_ROW)
        expect(row.locator("time.alert-time")).to_have_attribute(
            "datetime", re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
        )
    expect(rows.nth(0)).to_contain_text("#2")
    _fits(page, width)
    page.locator(f"#sub-{sub.pk}").scroll_into_view_if_needed()
    feed_docs = "alert-feed-phone" if phone else None  # the README shows the phone's
    screenshot(page, f"alert-feed-{width}", docs=feed_docs, full_page=False)
    page.goto(f"/markets/{SUBJECT}/")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(badge).to_be_hidden()
    assert new_page.errors == []
