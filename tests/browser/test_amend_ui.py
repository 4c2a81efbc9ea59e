"""Amending as a buyer and a seller do it (issue 22, item 1), in real headless Chromium
against uvicorn, a Celery worker and Redis: "Bid on this" on an offer's page, raising a bid
by the tick, a stale edit explained, editing an offer, exposure and withdrawing all bids.

Nothing waits on the clock: each step waits for what a person would see."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from exchange.models import Bid, Offer
from exchange.services.orders import bid_amend, offer_publish
from tests.factories import UserFactory

from .conftest import login, off_loop, screenshot
from .test_trading_ui import PENCILS_OFFER, pencils

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def test_buyer_bids_on_an_offer_raises_is_told_of_a_stale_edit_and_withdraws_all(
    new_page, live_stack
):
    market = off_loop(pencils)
    seller = UserFactory(username="sally")
    UserFactory(username="bruno")
    offer = off_loop(offer_publish, seller=seller, market=market, constraint=PENCILS_OFFER)
    page = new_page()
    page.on("dialog", lambda dialog: dialog.accept())
    login(page, "bruno")

    # "Bid on this tier" on tier 2 fills the bid form from the offer
    page.goto(f"/offers/{offer.pk}/")
    page.get_by_role("link", name="Bid on tier 2").click()
    form = page.locator('form.posting[data-side="bid"]')
    expect(form.get_by_label("Lot size from", exact=True)).to_have_value("5000")
    expect(form.get_by_label("Lot size to", exact=True)).to_have_value("10000")
    expect(form.get_by_label("Highest price you pay")).to_have_value("0.90")
    expect(form.locator(".preview")).to_contain_text("lot BETWEEN 5000 AND 10000 AND price <= 0.90")
    form.get_by_role("button", name="Place bid").click()
    page.wait_for_url(re.compile(r"/account/#bid-\d+$"))
    bid_id = int(page.url.rsplit("-", 1)[1])

    # The account page shows the exposure: 10,000 x 0.90
    expect(
        page.locator('[data-exposure="office.supplies.pencils"] [data-exposure-total]')
    ).to_have_text("9,000.00")
    # Its best bid on the offer (alone, so best) shows live on the bid's row
    row = page.locator(f"#bid-{bid_id}")
    expect(row.locator('[data-standing="best"]')).to_be_visible()

    # Raise by less than a tick: refused in words, nothing changed
    raise_box = row.get_by_label(f"Bid #{bid_id}: Raise to")
    expect(raise_box).to_have_value("0.91")
    expect(raise_box).to_have_attribute("step", "0.01")
    raise_box.fill("0.90")
    raise_box.evaluate("el => el.form.noValidate = true")  # the server's check, not the browser's
    row.get_by_role("button", name="Raise my bid").click()
    expect(page.locator(".msg-error")).to_contain_text(
        f"Bid #{bid_id} is not raised: Raise by at least one tick: 0.91 or more"
    )
    assert Bid.objects.get(pk=bid_id).version == 1

    # Raise to 0.95: amended, the exposure follows
    page.locator(f"#bid-{bid_id}").get_by_label(f"Bid #{bid_id}: Raise to").fill("0.95")
    page.locator(f"#bid-{bid_id}").get_by_role("button", name="Raise my bid").click()
    expect(page.locator(".msg-success")).to_have_text(
        f"Bid #{bid_id} now pays up to 0.95 (version 2)."
    )
    expect(page.locator("[data-exposure-total]")).to_have_text("9,500.00")
    assert "price <= 0.95 AND" in Bid.objects.get(pk=bid_id).constraint_text

    # Editing while another client amends first: the 409 in words, the current terms shown
    page.locator(f"#bid-{bid_id}").get_by_role("link", name="Edit").click()
    box = page.get_by_label("Constraint", exact=True)
    expect(box).to_have_value(re.compile(r"price <= 0\.95"))
    off_loop(
        bid_amend,
        buyer=Bid.objects.get(pk=bid_id).buyer,
        bid_id=bid_id,
        constraint="lot BETWEEN 5000 AND 10000 AND price <= 0.97",
        version=2,
    )
    box.fill("lot BETWEEN 5000 AND 10000 AND price <= 0.99")
    page.get_by_role("button", name="Save bid").click()
    expect(page.locator("#amend-error")).to_contain_text(
        f"Bid #{bid_id} was changed after this page was loaded"
    )
    expect(page.locator("#amend-error")).to_contain_text(
        "It is now at version 3 (you were editing version 2)."
    )
    expect(box).to_have_value(re.compile(r"price <= 0\.97"))
    screenshot(page, "amend-stale")
    # Saved from there: version 4
    box.fill("lot BETWEEN 5000 AND 10000 AND price <= 0.99")
    page.get_by_role("button", name="Save bid").click()
    expect(page.locator(".msg-success")).to_have_text(f"Bid #{bid_id} is amended (version 4).")

    # Withdraw every bid in the market at once
    page.get_by_role("button", name="Withdraw all my bids in Pencils").click()
    expect(page.locator(".msg-success")).to_have_text(f"Withdrawn in Pencils: bid #{bid_id}.")
    expect(page.locator("#exposure")).to_contain_text("No active bids")
    assert Bid.objects.get(pk=bid_id).state == "withdrawn"
    assert new_page.errors == []


def test_seller_edits_an_offer_from_its_page(new_page, live_stack):
    market = off_loop(pencils)
    seller = UserFactory(username="sally")
    offer = off_loop(offer_publish, seller=seller, market=market, constraint=PENCILS_OFFER)
    page = new_page()
    login(page, "sally")
    page.goto(f"/offers/{offer.pk}/")
    page.get_by_role("link", name="Edit offer").click()
    box = page.get_by_label("Constraint", exact=True)
    status = page.locator("[data-check-status]")
    box.fill("lot BETWEEN 1000 AND 10000 AND price >= 1.005")
    expect(status.locator(".check-bad")).to_have_attribute("data-error-code", "off_tick")
    box.fill("lot BETWEEN 1000 AND 10000 AND price >= 0.95")
    expect(status.locator(".check-ok")).to_contain_text("Valid")
    page.get_by_role("button", name="Save offer").click()
    page.wait_for_url(re.compile(rf"/offers/{offer.pk}/$"))
    expect(page.locator(".msg-success")).to_have_text(f"Offer #{offer.pk} is amended (version 2).")
    expect(page.locator(".constraint-block")).to_have_text(
        "lot BETWEEN 1000 AND 10000 AND price >= 0.95"
    )
    assert Offer.objects.get(pk=offer.pk).version == 2
    assert new_page.errors == []
