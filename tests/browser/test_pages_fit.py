"""Pages fit (issue 39, item 7) in real headless Chromium at a phone's width (390 px) and a
laptop's (1366 px): the market page's section nav reaches the offers, the posting form, the
trades and the analytics without scrolling past every offer (with and without JavaScript,
by keyboard too); the offers tables and the matching bids sort by the column pressed,
numbers as numbers, with aria-sort; the offer page's terms and matching bids show every
column inside their card; and no page logs a Content-Security-Policy error."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from exchange.models import Market
from exchange.services.limits import spending_limit_set
from exchange.services.orders import bid_place, offer_publish
from exchange.services.subscriptions import subscription_create
from tests.factories import StaffFactory, UserFactory, pencils_market

from .conftest import login, off_loop, screenshot

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

WIDTHS = (390, 1366)
SUBJECT = "office.supplies.pencils"
# The first offer and 13 more, whose lots decide their best bid: up to 1000 pencils 10.25,
# up to 1500 9.50 (sorted as numbers it comes before 10.25; as text it would not), up to
# 600,000 1.18, and above that no bid at all ("—", last whichever the order).
OFFERS = 14
LOTS = (900, 1200, 5000, 700000)
# (price, top lot) of the buyer's bids, all of which match the first offer: totals up to
# 280,000.00 EUR (250,000 pencils at 1.12), the widest numbers the matching-bids card shows
DEPTH = [("1.18", 600000), ("1.12", 250000), ("1.16", 8000), ("10.25", 1000), ("9.50", 1500)]


@dataclass
class World:
    offer: int
    offers: list[int]
    bid: int
    seller: str
    buyer: str
    staff: str


def _world() -> World:
    """Pencils with many open offers (the first has five matching bids, some very large),
    a buyer's alert, and a staff member."""
    market = pencils_market(subject=SUBJECT)
    seller = UserFactory()
    buyer = UserFactory()
    spending_limit_set(staff=None, user=buyer, amount=Decimal("10000000"))
    offers = [
        offer_publish(
            seller=seller,
            market=market,
            constraint="(lot BETWEEN 1000 AND 8000 AND price >= 1.15) OR "
            "(lot BETWEEN 8001 AND 600000 AND price >= 1.05)",
        )
    ]
    offers += [
        offer_publish(
            seller=seller,
            market=market,
            constraint=f"lot = {LOTS[n % len(LOTS)] + n} AND price >= 0.{10 + n}",
        )
        for n in range(OFFERS - 1)
    ]
    bids = [
        bid_place(buyer=buyer, market=market, constraint=f"lot <= {lot} AND price <= {price}")
        for price, lot in DEPTH
    ]
    subscription_create(
        owner=buyer, query=f"SELECT MIN(ask) FROM offers WHERE subject = '{SUBJECT}'"
    )
    staff = StaffFactory(is_superuser=True)
    return World(
        offers[0].pk,
        [o.pk for o in offers],
        bids[0].pk,
        seller.username,
        buyer.username,
        staff.username,
    )


def _one_more_offer(world: World) -> int:
    """An offer of 1100 pencils: the bid at 9.50 (up to 1500) is its best."""
    seller = get_user_model().objects.get(username=world.seller)
    market = Market.objects.get(subject=SUBJECT)
    return offer_publish(seller=seller, market=market, constraint="lot = 1100 AND price >= 0.05").pk


@pytest.fixture
def world(live_stack) -> World:
    return off_loop(_world)


def _column(page: Any, table: str, column: int) -> list[str]:
    return page.locator(f"{table} tbody tr").evaluate_all(
        f"(rows) => rows.map((r) => r.cells[{column}].textContent.trim())"
    )


def _numbers(texts: list[str]) -> list[Decimal | None]:
    found = [re.search(r"-?[\d,]+(?:\.\d+)?", t.lstrip("#")) for t in texts]
    return [Decimal(m.group(0).replace(",", "")) if m else None for m in found]


def _in_view(page: Any, selector: str) -> bool:
    return page.locator(selector).evaluate(
        "(el) => { const r = el.getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; }"
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_the_section_nav_reaches_each_part_of_the_market_page(new_page, world, width):
    # Given a seller on a market page with many offers
    page = new_page(width=width, height=800)
    login(page, world.seller)
    page.goto(f"/markets/{SUBJECT}/")
    nav = page.get_by_role("navigation", name="Market sections")
    expect(nav.get_by_role("link")).to_have_text(
        [f"Offers ({OFFERS})", "Buy or sell", "Trades", "Analytics"]
    )
    assert page.evaluate("document.documentElement.scrollHeight") > 2 * 800
    screenshot(page, f"market-sections-{width}", full_page=False)

    # When they follow "Buy or sell" from the nav, by keyboard
    nav.get_by_role("link", name="Buy or sell").focus()
    page.keyboard.press("Enter")

    # Then the posting form is in view, below the nav, which stays on screen
    expect(page).to_have_url(re.compile("#post$"))
    expect(page.locator("#tab-bid")).to_be_visible()
    page.wait_for_function(
        "() => { const r = document.getElementById('post').getBoundingClientRect();"
        " const n = document.querySelector('.section-nav').getBoundingClientRect();"
        " return r.top >= n.bottom - 1 && r.top < innerHeight && n.top >= 0; }"
    )
    page.locator("#tab-bid").click()
    expect(page.locator("#panel-bid")).to_be_visible()
    screenshot(
        page,
        f"market-sections-post-{width}",
        full_page=False,
        docs="market-phone-post" if width == 390 else None,
    )

    # And each other section is one step away, the nav still in view
    for name, target in (
        ("Trades", "recent-trades"),
        ("Analytics", "daily"),
        ("Offers", "open-offers"),
    ):
        nav.get_by_role("link", name=re.compile(f"^{name}")).click()
        expect(page).to_have_url(re.compile(f"#{target}$"))
        page.wait_for_function(
            f"() => {{ const r = document.getElementById('{target}').getBoundingClientRect();"
            " return r.top >= 0 && r.top < innerHeight; }"
        )
        assert _in_view(page, ".section-nav")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_section_nav_works_without_javascript(browser, live_stack, world, width):
    # Given the market page with scripts off (the nav is plain links)
    context = browser.new_context(
        base_url=live_stack.url, viewport={"width": width, "height": 800}, java_script_enabled=False
    )
    try:
        page = context.new_page()
        page.goto(f"/markets/{SUBJECT}/")

        # When "Buy or sell" is followed
        page.get_by_role("navigation", name="Market sections").get_by_role(
            "link", name="Buy or sell"
        ).click()

        # Then the trading card (here: log in or register) is in view
        expect(page).to_have_url(re.compile("#post$"))
        assert _in_view(page, "#post")
        expect(page.locator("#post")).to_contain_text("log in")
    finally:
        context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_offers_tables_sort_by_the_pressed_column(new_page, world, width):
    # Given the market's offers, each with its best bid
    page = new_page(width=width, height=900)
    login(page, world.buyer)
    page.goto(f"/markets/{SUBJECT}/")
    table = "#open-offers table"
    best = page.locator(f"{table} thead th", has_text="Best bid")
    expect(best.get_by_role("button")).to_be_visible()
    expect(best).not_to_have_attribute("aria-sort", re.compile("."))

    # When Best bid is pressed: ascending, numerically, empty last
    best.get_by_role("button").click()
    expect(best).to_have_attribute("aria-sort", "ascending")
    values = _numbers(_column(page, table, 2))
    known = [v for v in values if v is not None]
    assert known == sorted(known) and set(known) == {
        Decimal("9.50"),
        Decimal("10.25"),
        Decimal("1.18"),
    }
    assert values == known + [None] * (len(values) - len(known))
    screenshot(page, f"offers-sorted-{width}", full_page=False)

    # And pressed again: descending, empty still last
    best.get_by_role("button").click()
    expect(best).to_have_attribute("aria-sort", "descending")
    values = _numbers(_column(page, table, 2))
    assert values == sorted(known, reverse=True) + [None] * (len(values) - len(known))

    # When the Offer column is pressed: #9 before #10 (numbers, not text), only it has aria-sort
    offer = page.locator(f"{table} thead th", has_text="Offer")
    # Focused and pressed in one action: a live refresh that redraws the table between a
    # separate focus and key press takes the focus with the old button, and Enter is lost.
    offer.get_by_role("button").press("Enter")
    expect(offer).to_have_attribute("aria-sort", "ascending")
    expect(best).not_to_have_attribute("aria-sort", re.compile("."))
    assert _numbers(_column(page, table, 0)) == sorted(Decimal(pk) for pk in world.offers)

    # When Best bid is pressed again (ascending) and another offer arrives live, its best bid
    # patched in as the engine matches it
    best.get_by_role("button").click()
    expect(best).to_have_attribute("aria-sort", "ascending")
    off_loop(_one_more_offer, world)

    # Then the refreshed table keeps the order: the new offer among the 9.50s, blanks last
    expect(page.locator(f"{table} tbody tr")).to_have_count(OFFERS + 1)
    expect(page.locator(f"{table} tbody tr td:nth-child(3)")).to_have_text(
        ["1.18"] * 3 + ["9.50"] * 4 + ["10.25"] * 5 + ["—"] * 3
    )
    expect(best).to_have_attribute("aria-sort", "ascending")

    # And on the account page, the bids table sorts by bid number, descending on a second press
    page.goto("/account/")
    bid = page.locator("#bids table thead th", has_text="Bid")
    bid.get_by_role("button").click()
    bid.get_by_role("button").click()
    expect(bid).to_have_attribute("aria-sort", "descending")
    numbers = _numbers(_column(page, "#bids table", 0))
    assert numbers == sorted(numbers, reverse=True) and len(numbers) == len(DEPTH)


@pytest.mark.parametrize("width", WIDTHS)
def test_matching_bids_sort_and_fit_their_card(new_page, world, width):
    # Given the seller on their offer with five matching bids
    page = new_page(width=width, height=900)
    login(page, world.seller)
    page.goto(f"/offers/{world.offer}/")
    table = "#depth table"
    expect(page.locator(f"{table} tbody tr")).to_have_count(len(DEPTH))

    # Then every column of the matching bids and of the terms is in view, none scrolled away
    for wrap in ("#depth .table-wrap", "section[aria-labelledby=terms-title] .table-wrap"):
        assert page.locator(wrap).evaluate("(el) => el.scrollWidth <= el.clientWidth + 1"), wrap
    expect(page.locator(table)).to_contain_text("280,000.00")
    screenshot(page, f"offer-fit-{width}", docs="offer-matching-bids" if width == 1366 else None)

    # When Total is pressed: the totals in ascending order, as numbers
    total = page.locator(f"{table} thead th", has_text="Total")
    total.get_by_role("button").click()
    expect(total).to_have_attribute("aria-sort", "ascending")
    totals = _numbers(_column(page, table, 3))
    assert totals == sorted(totals) and totals[-1] == Decimal("280000.00")

    # And Value pressed twice: descending values, 10.25 first (not "9.50" as text would be)
    value = page.locator(f"{table} thead th", has_text="Value")
    value.get_by_role("button").click()
    value.get_by_role("button").click()
    expect(value).to_have_attribute("aria-sort", "descending")
    assert _column(page, table, 1)[:2] == ["10.25", "9.50"]


@pytest.mark.parametrize("width", WIDTHS)
def test_no_main_page_logs_a_console_error(new_page, world, width):
    # Given each main page, opened by whoever may see it
    pages = [
        (None, "/"),
        (None, f"/markets/{SUBJECT}/"),
        (None, f"/offers/{world.offer}/"),
        (None, "/docs/api/"),
        (world.seller, f"/markets/{SUBJECT}/"),
        (world.seller, f"/markets/{SUBJECT}/post/?side=offer"),
        (world.seller, f"/offers/{world.offer}/edit/"),
        (world.seller, f"/offers/{world.offer}/"),
        (world.seller, "/account/"),
        (world.buyer, f"/markets/{SUBJECT}/"),
        (world.buyer, f"/offers/{world.offer}/"),
        (world.buyer, "/account/"),
        (world.buyer, "/alerts/"),
        (world.buyer, f"/bids/{world.bid}/"),
        (world.buyer, f"/bids/{world.bid}/edit/"),
        (world.staff, "/staff/"),
    ]
    opened: dict[str | None, Any] = {}
    tabs = []
    for user, path in pages:
        page = opened.get(user)
        if page is None:
            page = opened[user] = new_page(width=width, height=900)
            if user is not None:
                login(page, user)
        else:  # each page in a tab of its own, so that they settle together
            page = new_page.tab(page)

        # When it loads and settles (the posting form's preview, live regions, charts)
        response = page.goto(path)
        assert response is not None and response.status == 200, path
        tabs.append(page)
    for page in tabs:
        page.wait_for_load_state("networkidle")

    # And a buyer fills in the bid form on the market page (its preview and award are
    # fetched as they type)
    page = opened[world.buyer]
    page.goto(f"/markets/{SUBJECT}/")
    page.locator("#tab-bid").click()
    page.locator("#panel-bid").get_by_label("Highest price you pay").fill("1.20")
    expect(page.locator("#bid-preview")).to_contain_text("price <= 1.20")
    page.wait_for_load_state("networkidle")

    # Then no Content-Security-Policy violation, no evalDisallowed and no uncaught error
    assert new_page.errors == []
