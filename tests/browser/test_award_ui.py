"""The bid form tells a buyer the largest lot and total a bid could win before it is sent
(issue 39, item 1), in real headless Chromium at 390 and 1366 px against the live stack: the
issue's story (a bid at 0.92 with no upper lot would have won 600,000 pencils) shown as
past the limit and refused on placing with the numbers; with an upper lot it fits and is
placed.

Nothing waits on the clock: each step waits for what a person would see."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from exchange.models import Bid
from exchange.services.limits import spending_limit_set
from exchange.services.orders import offer_publish
from tests.factories import UserFactory

from .conftest import login, off_loop, screenshot
from .test_trading_ui import pencils

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def _fits(page, width: int) -> None:
    """The page does not scroll sideways and the award's words stay inside the form."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    form = page.locator('form.posting[data-side="bid"]').bounding_box()
    award = page.locator('form.posting[data-side="bid"] [data-award]').bounding_box()
    assert form is not None and award is not None
    assert form["x"] <= award["x"] and award["x"] + award["width"] <= form["x"] + form["width"]


@pytest.mark.parametrize("width", [390, 1366])
def test_the_bid_form_shows_the_largest_lot_and_total_before_it_is_sent(
    new_page, live_stack, width
):
    market = off_loop(pencils)
    seller = UserFactory(username="sally")
    buyer = UserFactory(username="bruno")
    off_loop(spending_limit_set, staff=None, user=buyer, amount=Decimal("100000"))
    off_loop(
        offer_publish,
        seller=seller,
        market=market,
        constraint="lot BETWEEN 1000 AND 600000 AND price >= 0.90",
    )
    page = new_page(width=width, height=900)
    login(page, "bruno")
    page.goto(f"/markets/{market.subject}/post/?side=bid")
    form = page.locator('form.posting[data-side="bid"]')
    award = form.locator("[data-award]")

    # No upper lot: the largest lot of the offer it matches counts
    form.get_by_label("Highest price you pay").fill("0.92")
    expect(award).to_have_text(
        "It could win at most 600,000 pencils at 0.92 EUR: 552,000.00 EUR in all. "
        "100,000.00 EUR is left of your spending limit: more than that, so it would be refused."
    )
    expect(award).to_have_attribute("data-state", "over")
    expect(award).to_have_attribute("data-largest-lot", "600000")
    expect(award).to_have_attribute("data-largest-award", "552000.00")
    _fits(page, width)
    screenshot(page, f"bid-form-award-over-{width}")

    # Sent anyway: refused with the numbers, nothing placed
    form.get_by_role("button", name="Place bid").click()
    refusal = page.locator("#bid-form-error")
    expect(refusal).to_contain_text(
        "Not placed: Bid refused: it could win 600,000 at 0.92, 552,000.00 in all, but "
        "100,000.00 is left of your spending limit of 100,000.00"
    )
    expect(refusal).to_have_attribute("data-error-code", "over_limit")
    assert off_loop(Bid.objects.count) == 0

    # An upper lot that fits: shown as fitting, then placed
    form = page.locator('form.posting[data-side="bid"]')
    award = form.locator("[data-award]")
    form.get_by_label("Lot size to", exact=True).fill("100000")
    expect(award).to_have_text(
        "It could win at most 100,000 pencils at 0.92 EUR: 92,000.00 EUR in all. "
        "100,000.00 EUR is left of your spending limit."
    )
    expect(award).to_have_attribute("data-state", "ok")
    _fits(page, width)
    screenshot(
        page,
        f"bid-form-award-fits-{width}",
        docs="bid-form-award" if width == 1366 else "bid-form-award-phone",
    )
    form.get_by_role("button", name="Place bid").click()
    page.wait_for_url(re.compile(r"/account/#bid-\d+$"))
    bid = off_loop(Bid.objects.get)
    assert (bid.constraint_text, bid.largest_award) == (
        "lot <= 100000 AND price <= 0.92 AND string grade = *",
        Decimal("92000.00"),
    )
    assert new_page.errors == []
