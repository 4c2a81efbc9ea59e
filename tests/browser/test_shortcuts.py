"""The "alert me when ..." shortcuts in real Chromium on the live stack, at phone and desktop
widths: each form takes the user to the Alerts and feeds page with the query filled in, and a
value that cannot make an alert comes back beside its field, to be corrected in place."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from exchange.services.orders import offer_publish
from tests.factories import UserFactory, pencils_market

from .conftest import login, off_loop, screenshot

PENCILS = "office.supplies.pencils"
ALERTS = re.compile(r"/alerts/\?")


# Every element of the card inside the card's box (nothing clipped or sticking out).
OUTSIDE = """card => [...card.querySelectorAll('*')].filter(e => {
  const c = card.getBoundingClientRect(), r = e.getBoundingClientRect();
  return r.width > 0 && (r.left < c.left - 0.5 || r.right > c.right + 0.5);
}).map(e => e.id || e.tagName)"""


def _filled_in(page) -> dict[str, list[str]]:
    """Where the shortcut led: the Alerts and feeds page's address, whose query and name
    its editor shows, unsaved."""
    page.wait_for_url(ALERTS)
    filled = parse_qs(urlsplit(page.url).query)
    expect(page.get_by_label("Query")).to_have_value(filled["query"][0])
    return filled


@pytest.mark.stack
@pytest.mark.usefixtures("clean_engine")
@pytest.mark.parametrize("width", [390, 1366])
def test_the_market_shortcuts_fill_in_the_alerts_page(new_page, live_stack, width):
    off_loop(pencils_market)
    UserFactory(username="watcher")
    page = new_page(width=width)
    login(page, "watcher")  # the Alerts and feeds page is for signed-in users
    page.goto(f"/markets/{PENCILS}/")
    card = page.locator("#alert-shortcuts")
    expect(card.get_by_role("heading")).to_have_text("Alert me when…")
    screenshot(page, f"shortcuts-market-{width}")
    assert card.evaluate(OUTSIDE) == []
    assert new_page.errors == []

    # a price below 0.95
    page.locator("#shortcut-price-direction").select_option("below")
    page.locator("#shortcut-price-price").fill("0.95")
    card.locator("form", has=page.locator("#shortcut-price-price")).get_by_role("button").click()
    assert _filled_in(page) == {
        "query": [
            "SELECT price, quantity WHERE type = 'trade', "
            "subject = 'office.supplies.pencils', price < 0.95"
        ],
        "name": ["Pencils: a trade below 0.95"],
    }

    # a fall of 150% cannot be: the message comes back beside the field, the value kept
    page.goto(f"/markets/{PENCILS}/")
    page.locator("#shortcut-jump-direction").select_option("fall")
    page.locator("#shortcut-jump-percent").fill("150")
    page.locator("#shortcut-jump-within").select_option("10m")
    page.locator("form", has=page.locator("#shortcut-jump-percent")).get_by_role("button").click()
    error = page.locator("#shortcut-jump-percent-err")
    expect(error).to_have_text("A price cannot fall by 100% or more: give less than 100.")
    expect(page.locator("#shortcut-jump-percent")).to_have_value("150")
    expect(page.locator("#shortcut-jump-percent")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#shortcut-jump-within")).to_have_value("10m")
    assert page.locator(".shortcut-retry").evaluate(OUTSIDE) == []
    screenshot(page, f"shortcuts-error-{width}")

    # corrected there, it goes on
    page.locator("#shortcut-jump-percent").fill("15")
    page.locator("form", has=page.locator("#shortcut-jump-percent")).get_by_role("button").click()
    assert _filled_in(page)["name"] == ["Pencils: a fall of more than 15% within 10m"]

    # the cheapest offer for a lot of 2,000 to 5,000
    page.goto(f"/markets/{PENCILS}/")
    page.locator("#shortcut-lot-low").fill("2000")
    page.locator("#shortcut-lot-high").fill("5000")
    page.locator("form", has=page.locator("#shortcut-lot-low")).get_by_role("button").click()
    assert _filled_in(page)["query"] == [
        "SELECT MIN(ask) FROM offers WHERE subject = 'office.supplies.pencils' "
        "AND quantity_max BETWEEN 2000 AND 5000"
    ]
    assert new_page.errors == []


@pytest.mark.stack
@pytest.mark.usefixtures("clean_engine")
@pytest.mark.parametrize("width", [390, 1366])
def test_the_offer_page_watch_fills_in_the_alerts_page(new_page, live_stack, width):
    def world():
        market = pencils_market()
        return offer_publish(
            seller=UserFactory(), market=market, constraint="lot = 100 AND price >= 1.00"
        )

    offer = off_loop(world)
    UserFactory(username="watcher")
    page = new_page(width=width)
    login(page, "watcher")
    page.goto(f"/offers/{offer.pk}/")
    expect(page.locator("#alert-shortcuts .card-title")).to_have_text("Tell me when…")
    assert page.locator("#alert-shortcuts").evaluate(OUTSIDE) == []
    page.locator("#shortcut-move-by").fill("2.5")
    page.locator("#shortcut-move-unit").select_option("percent")
    page.locator("#alert-shortcuts").get_by_role("button").click()
    assert _filled_in(page) == {
        "query": [
            f"SELECT best_value FROM offers WHERE offer = {offer.pk} NOTIFY WHEN CHANGED BY 2.5%"
        ],
        "name": [f"Offer #{offer.pk}: best bid moves by more than 2.5%"],
    }
    assert new_page.errors == []
