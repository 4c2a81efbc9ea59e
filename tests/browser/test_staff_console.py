"""The staff console in real headless Chromium against the live stack (issue 22, item 4):
from the site's header to the dashboard, from there to an open offer's admin page, whose
Close and Cancel buttons lead to the confirmation page and act only on "Yes"."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from exchange.models import Offer, Trade
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market

from .conftest import login, off_loop, screenshot

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def _book() -> tuple[Offer, Offer, int]:
    """Two open auctions, the first with carol's bid as its winner-to-be; matched."""
    market = pencils_market()
    seller = UserFactory(username="sam")
    sold = offer_publish(seller=seller, market=market, constraint="lot = 8000 AND price >= 1")
    kept = offer_publish(seller=seller, market=market, constraint="lot = 5 AND price >= 9")
    bid = bid_place(
        buyer=UserFactory(username="carol"),
        market=market,
        constraint="lot = 8000 AND price <= 1.18",
    )
    matching_cycle_run()
    return sold, kept, bid.pk


def test_staff_close_and_cancel_from_the_offer_page_after_confirming(new_page, live_stack):
    StaffFactory(username="stella", is_superuser=True)
    sold, kept, bid_id = off_loop(_book)
    staff = new_page()
    login(staff, "stella")

    # The header leads staff to the dashboard, which lists both auctions
    staff.get_by_role("link", name="Staff dashboard").click()
    expect(staff.locator("h2#auctions")).to_have_text("Open auctions: the winner-to-be")
    row = staff.locator("tr", has=staff.get_by_role("link", name=f"offer {sold.pk}", exact=True))
    expect(row).to_contain_text(f"bid {bid_id} by carol")
    expect(row).to_contain_text("1.18 EUR")
    expect(row).to_contain_text("8,000 pencils")

    # The offer's admin page: Close leads to the confirmation page, and only "Yes" closes
    row.get_by_role("link", name=f"offer {sold.pk}").click()
    expect(staff.locator("#content h2")).to_have_text(f"offer {sold.pk} in office.supplies.pencils")
    screenshot(staff, "admin-offer-close-cancel")
    staff.get_by_role("button", name="Close…").click()
    expect(staff.locator("#content")).to_contain_text("Closing is final.")
    expect(staff.locator("#content table")).to_contain_text(f"bid {bid_id} by carol")
    assert Offer.objects.get(pk=sold.pk).state == "open"
    staff.get_by_role("button", name="Yes, close 1 auction").click()
    expect(staff.locator(".messagelist")).to_contain_text("Closed 1 auction: 1 sold, 0 unsold.")
    trade = Trade.objects.get(offer_id=sold.pk)
    assert (trade.bid_id, str(trade.price), trade.quantity) == (bid_id, "1.1800000000", 8000)

    # A closed offer's page has no buttons; the trade list writes numbers as the market does
    staff.goto(f"/admin/exchange/offer/{sold.pk}/change/")
    expect(staff.locator("#content h2")).to_have_text(f"offer {sold.pk} in office.supplies.pencils")
    expect(staff.get_by_role("button", name=re.compile("Close|Cancel"))).to_have_count(0)
    staff.goto("/admin/exchange/trade/")
    expect(staff.locator("td.field-price_shown")).to_have_text(["1.18 EUR"])
    expect(staff.locator("td.field-quantity_shown")).to_have_text(["8,000 pencils"])

    # Cancel: "No, go back" changes nothing; "Yes" cancels
    staff.goto(f"/admin/exchange/offer/{kept.pk}/change/")
    staff.get_by_role("button", name="Cancel…").click()
    expect(staff.locator("#content")).to_contain_text("Cancelling is final.")
    staff.get_by_role("link", name="No, go back").click()
    expect(staff).to_have_url(re.compile(r"/admin/exchange/offer/$"))
    assert Offer.objects.get(pk=kept.pk).state == "open"
    staff.goto(f"/admin/exchange/offer/{kept.pk}/change/")
    staff.get_by_role("button", name="Cancel…").click()
    staff.get_by_role("button", name="Yes, cancel 1 offer").click()
    expect(staff.locator(".messagelist")).to_contain_text("Cancelled 1 offer.")
    assert Offer.objects.get(pk=kept.pk).state == "cancelled"

    # The admin's index links back to the dashboard
    staff.goto("/admin/")
    expect(
        staff.locator("#staff-console").get_by_role("link", name="Staff dashboard")
    ).to_have_attribute("href", "/staff/")
    assert new_page.errors == []
