"""The Alerts and feeds page end to end, in real headless Chromium against uvicorn, the
Celery workers (matching, subscriptions) and Redis: a query's error marked as you type, a
gallery example saved, a notification arriving live after a bid, the feed resumed after a
reload with what came while the page was away (no gap, no repeat), pause, resume and
delete, and a backtest drawn on the price chart and as a table, at 390 and 1366 px.

Each step waits for what a person would see (Playwright's expect); the database is polled
only to know that the worker has done its part while no page is open."""

from __future__ import annotations

import os
import re
import time

import pytest
from playwright.sync_api import expect

from exchange.models import Subscription
from exchange.services.orders import bid_place
from exchange.services.subscriptions import subscription_create
from tests.factories import UserFactory
from tests.livestack import ROOT
from tests.subscriptions.log import append, trade

from .conftest import WAIT_MS, login, off_loop, screenshot
from .test_trading_ui import EXTERNAL_JS, SUBJECT, UNLABELLED_JS, pencils, trading_history

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

DOCS_SHOTS = ROOT / "docs" / "screenshots"
BIDS = "SELECT bid, limit WHERE type = 'bid_placed'"
# Elements wider than the card they sit in (a scrolling table's own width aside).
OVERFLOW_JS = """() => {
  const out = [];
  for (const card of document.querySelectorAll('.card')) {
    const edge = card.getBoundingClientRect().right + 1;
    for (const el of card.querySelectorAll('*')) {
      if (el.closest('.table-wrap') && el.closest('.table-wrap') !== el) continue;
      if (el.getBoundingClientRect().right > edge) out.push(el.outerHTML.slice(0, 100));
    }
  }
  return out.slice(0, 5);
}"""


def docs_shot(page, selector: str, name: str) -> None:
    """A screenshot of the page for the test's artifacts and, of the card ``selector``
    alone (a small PNG), docs/screenshots/<name>.png for the README when that file is
    missing or UPDATE_DOCS_IMG=1 (a test run does not rewrite committed pictures)."""
    screenshot(page, name)
    target = DOCS_SHOTS / f"{name}.png"
    if not target.exists() or os.environ.get("UPDATE_DOCS_IMG") == "1":
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(selector).screenshot(path=str(target), animations="disabled")


def wait_for(predicate, what: str):
    """Poll the database until the live worker has done ``what`` (no page shows it yet)."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"the worker did not get to: {what}")


def feed_ns(page, sid: int) -> list[int]:
    return [
        int(n)
        for n in page.locator(f"#feed-{sid} > li").evaluate_all(
            "(items) => items.map((li) => li.dataset.n)"
        )
    ]


def place_bid(buyer, market, price: str) -> None:
    off_loop(bid_place, buyer=buyer, market=market, constraint=f"lot = 100 AND price <= {price}")


def test_an_error_is_marked_as_you_type_and_a_gallery_example_is_saved(new_page, live_stack):
    UserFactory(username="alice")
    page = new_page(width=1366, height=900)
    login(page, "alice")
    page.get_by_role("link", name="Alerts and feeds").click()
    expect(page).to_have_url(re.compile(r"/alerts/$"))

    # A query naming an attribute events do not have: marked where it is, 1-based
    box = page.get_by_label("Query")
    box.fill("SELECT colour WHERE type = 'trade'")
    status = page.locator("#alert-query-status")
    expect(status.locator(".check-bad")).to_have_attribute("data-error-code", "unknown_attribute")
    expect(status.locator(".check-bad")).to_contain_text("(line 1, column 8)")
    expect(page.locator("[data-mirror] mark.err")).to_have_text("colour")
    expect(box).to_have_attribute("aria-invalid", "true")
    docs_shot(page, "#editor", "alerts-error")

    # Corrected, it is valid and shows the text it saves as
    box.fill("select price where type='trade'")
    expect(status.locator(".check-ok")).to_contain_text("Valid (events)")
    expect(status.locator("pre")).to_have_text("SELECT price WHERE type = 'trade'")
    expect(page.locator("[data-mirror] mark.err")).to_have_count(0)

    # An example from the gallery fills the editor; nothing is saved before Save
    page.get_by_role("link", name=re.compile("Prices rising for 30 minutes")).click()
    query = page.locator("[data-example-name='Prices rising for 30 minutes']").get_attribute(
        "data-example-query"
    )
    expect(box).to_have_value(query)
    expect(page.get_by_label("Name")).to_have_value("Prices rising for 30 minutes")
    expect(status.locator(".check-ok")).to_contain_text("Valid (pattern)")
    assert Subscription.objects.count() == 0
    page.get_by_role("button", name="Save").click()

    page.wait_for_url(re.compile(r"/alerts/#sub-\d+$"))
    sid = int(page.url.rsplit("-", 1)[1])
    row = Subscription.objects.get(pk=sid)
    assert (row.owner.username, row.name, row.query, row.kind, row.state) == (
        "alice",
        "Prices rising for 30 minutes",
        query,
        "pattern",
        "active",
    )
    item = page.locator(f"#sub-{sid}")
    expect(item.locator("[data-state-badge]")).to_have_text("active")
    expect(item.locator("[data-feed-empty]")).to_be_visible()


@pytest.mark.parametrize("width", [390, 1366])
def test_a_subject_no_market_matches_is_a_warning_as_you_type_and_may_be_saved(
    new_page, live_stack, width
):
    # Given the pencils market and no other
    off_loop(pencils)
    UserFactory(username="alice")
    page = new_page(width=width, height=900)
    login(page, "alice")
    page.goto("/alerts/")
    box = page.get_by_label("Query")
    status = page.locator("#alert-query-status")

    # When a subject is misspelt: valid, but warned of where it is, with the nearest subject
    box.fill("SELECT price WHERE type = 'trade',\n  subject = 'office.supplies.pencls'")
    expect(status.locator(".check-ok")).to_contain_text("Valid (events)")
    warning = status.locator(".check-warn")
    expect(warning).to_have_text(
        "Warning: No market has subject 'office.supplies.pencls' yet: this subscription "
        "notifies nothing until one does. Did you mean 'office.supplies.pencils'? "
        "(line 2, column 13)"
    )
    expect(warning).to_have_attribute("data-warning-code", "no_market")
    expect(box).not_to_have_attribute("aria-invalid", "true")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.evaluate(OVERFLOW_JS) == []
    docs_shot(page, "#editor", f"alerts-warning-{width}")

    # Corrected: no warning
    box.fill("SELECT price WHERE type = 'trade', subject = 'office.supplies.pencils'")
    expect(status.locator("pre")).to_have_text(
        "SELECT price WHERE type = 'trade', subject = 'office.supplies.pencils'"
    )
    expect(status.locator(".check-warn")).to_have_count(0)

    # A pattern for markets still to come is warned of, and saved all the same
    box.fill("SELECT price WHERE type = 'trade', subject MATCHES 'office.furniture.>'")
    expect(status.locator(".check-warn")).to_contain_text(
        "No market's subject matches 'office.furniture.>' yet"
    )
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(r"/alerts/#sub-\d+$"))
    row = off_loop(Subscription.objects.get)
    assert (row.query, row.state) == (
        "SELECT price WHERE type = 'trade', subject MATCHES 'office.furniture.>'",
        "active",
    )
    assert new_page.errors == []


def test_the_feed_is_live_and_resumes_after_a_reload_with_no_gap_and_no_repeat(
    new_page, live_stack
):
    market = off_loop(pencils)
    alice = UserFactory(username="alice")
    sub = off_loop(subscription_create, owner=alice, query=BIDS, name="my bids")
    page = new_page(width=1366, height=900)
    login(page, "alice")
    page.goto("/alerts/")
    expect(page.locator(f"#sub-{sub.pk} [data-state-badge]")).to_have_text("active")
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")

    # A bid placed now arrives in the feed live, through the matching and subscription workers
    place_bid(alice, market, "1.01")
    note = page.locator(f"#feed-{sub.pk} > li[data-n='1']")
    expect(note).to_contain_text("limit 1.01")
    expect(page.locator(f"#sub-{sub.pk} [data-count]")).to_have_text("1")
    assert feed_ns(page, sub.pk) == [1]

    # While the page is away, two more bids are placed and notified
    page.goto("/account/")
    place_bid(alice, market, "1.02")
    place_bid(alice, market, "1.03")
    wait_for(lambda: Subscription.objects.get(pk=sub.pk).last_n == 3, "two more notifications")

    # Back on the page, the feed holds all three once, the two new ones marked as new
    page.goto("/alerts/")
    expect(page.locator(f"#feed-{sub.pk} > li")).to_have_count(3)
    assert feed_ns(page, sub.pk) == [3, 2, 1]
    classes = page.locator(f"#feed-{sub.pk} > li").evaluate_all(
        "(items) => items.map((li) => li.classList.contains('alert-note-new'))"
    )
    assert classes == [True, True, False]

    # and it goes on live from there: the next one once, nothing repeated by the resume
    place_bid(alice, market, "1.04")
    expect(page.locator(f"#feed-{sub.pk} > li[data-n='4']")).to_contain_text("limit 1.04")
    assert feed_ns(page, sub.pk) == [4, 3, 2, 1]

    # A reload while nothing new came shows the same four, and nothing twice
    page.reload()
    expect(page.locator(f"#feed-{sub.pk} > li")).to_have_count(4)
    expect(page.locator("#live-status")).to_have_attribute("data-state", "open")
    place_bid(alice, market, "1.05")
    expect(page.locator(f"#feed-{sub.pk} > li[data-n='5']")).to_contain_text("limit 1.05")
    assert feed_ns(page, sub.pk) == [5, 4, 3, 2, 1]
    docs_shot(page, "#mine", "alerts-feed")


def test_pause_resume_and_delete(new_page, live_stack):
    market = off_loop(pencils)
    alice = UserFactory(username="alice")
    sub = off_loop(subscription_create, owner=alice, query=BIDS, name="paused bids")
    control = off_loop(subscription_create, owner=alice, query=BIDS, name="control")
    page = new_page(width=1366, height=900)
    login(page, "alice")
    page.goto("/alerts/")
    item = page.locator(f"#sub-{sub.pk}")

    # Paused, it keeps its place: a bid placed meanwhile is not notified
    item.get_by_role("button", name="Pause").click()
    expect(item.locator("[data-state-badge]")).to_have_text("paused")
    expect(page.locator(".msg-success")).to_contain_text(f"Paused subscription {sub.pk}")
    place_bid(alice, market, "1.01")
    wait_for(lambda: Subscription.objects.get(pk=control.pk).last_n == 1, "the active one's")
    row = Subscription.objects.get(pk=sub.pk)
    assert (row.state, row.last_n, row.cursor) == ("paused", 0, row.seam)

    # Resumed, it catches up: the bid of the pause arrives, once
    item.get_by_role("button", name="Resume").click()
    expect(item.locator("[data-state-badge]")).to_have_text("active")
    expect(page.locator(f"#feed-{sub.pk} > li[data-n='1']")).to_contain_text("limit 1.01")
    assert feed_ns(page, sub.pk) == [1]

    # Deleting asks first; dismissed, nothing happens
    page.once("dialog", lambda dialog: dialog.dismiss())
    item.get_by_role("button", name="Delete").click()
    expect(item.locator("[data-state-badge]")).to_have_text("active")
    assert Subscription.objects.get(pk=sub.pk).state == "active"
    page.once("dialog", lambda dialog: dialog.accept())
    item.get_by_role("button", name="Delete").click()
    # Deleted, it is archived out of the list; the API keeps it and its feed
    expect(page.locator(".msg-success")).to_contain_text(f"Deleted subscription {sub.pk}")
    expect(item).to_have_count(0)
    expect(page.locator("#archived")).to_contain_text("1 deleted subscription archived")
    row = Subscription.objects.get(pk=sub.pk)
    assert (row.state, row.reason, row.last_n) == ("done", "deleted", 1)


def test_older_notifications_are_shown_on_request_each_once(new_page, live_stack):
    alice = UserFactory(username="alice")
    sub = off_loop(subscription_create, owner=alice, query="SELECT price WHERE type = 'trade'")
    off_loop(append, [trade(f"1.{i:02d}", trade_id=i) for i in range(1, 36)])
    wait_for(lambda: Subscription.objects.get(pk=sub.pk).last_n == 35, "35 notifications")
    page = new_page(width=1366, height=900)
    login(page, "alice")
    page.goto("/alerts/")

    # The feed shows the newest 30; the older five come a page at a time, under them
    expect(page.locator(f"#feed-{sub.pk} > li")).to_have_count(30)
    assert feed_ns(page, sub.pk) == list(range(35, 5, -1))
    page.locator(f"#sub-{sub.pk}").get_by_role("button", name="Show older").click()
    expect(page.locator(f"#feed-{sub.pk} > li")).to_have_count(35)
    assert feed_ns(page, sub.pk) == list(range(35, 0, -1))
    expect(page.locator(f"#feed-{sub.pk} > li[data-n='1']")).to_contain_text("price 1.01")
    expect(page.get_by_role("button", name="Show older")).to_have_count(0)


@pytest.mark.parametrize("width", [390, 1366])
def test_a_backtest_is_drawn_on_the_chart_and_as_a_table_and_fits(new_page, live_stack, width):
    market = off_loop(pencils)
    off_loop(trading_history, market, ["0.96", "1.04", "0.99", "1.08"])
    alice = UserFactory(username="alice")
    off_loop(subscription_create, owner=alice, query=BIDS, name="my bids")
    place_bid(alice, market, "0.50")
    page = new_page(width=width, height=900)
    login(page, "alice")
    page.goto("/alerts/")

    # Trades above 1.00 over the last hour: two of the four
    page.get_by_label("Query").fill(
        f"SELECT price WHERE type = 'trade', subject = '{SUBJECT}', price > 1.00"
    )
    expect(page.locator("#alert-query-status .check-ok")).to_contain_text("Valid")
    page.get_by_label("Backtest over").select_option("hour")
    page.get_by_role("button", name="Run backtest").click()

    result = page.locator("#backtest-result")
    expect(result.locator("[data-backtest-count]")).to_have_attribute("data-backtest-count", "2")
    rows = result.locator("table.backtest-table tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("1.04")
    expect(rows.nth(1)).to_contain_text("1.08")
    chart = result.locator("[data-backtest-chart]")
    expect(chart).to_have_attribute("data-markers", "2")
    expect(chart).to_have_attribute("data-drawn", "4")
    expect(chart.locator("canvas").first).to_be_visible()
    assert Subscription.objects.filter(owner=alice).count() == 1

    # Nothing overflows its card, at a phone's width too; nothing comes from outside and
    # every field has a label
    expect(page.locator(f"#feed-{Subscription.objects.get(owner=alice).pk} > li")).to_have_count(1)
    assert page.evaluate(OVERFLOW_JS) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.evaluate(EXTERNAL_JS) == []
    assert page.evaluate(UNLABELLED_JS) == []
    docs_shot(page, "#backtest", f"alerts-backtest-{width}")
