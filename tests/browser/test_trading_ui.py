"""The web UI end to end, in real headless Chromium against uvicorn, a Celery worker and Redis.

Every user has a browser context of their own. Nothing waits on the clock: each step waits
for what a person would see (Playwright's expect, with generous time-outs).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from exchange.models import Bid, Event, Market, Offer, Trade
from exchange.services.closing import offer_close
from exchange.services.markets import market_create
from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory
from tests.livestack import ROOT

from .conftest import login, off_loop, screenshot

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

SUBJECT = "office.supplies.pencils"
PENCILS_OFFER = "(lot BETWEEN 1000 AND 10000 AND price >= 1.00) OR (lot BETWEEN 5000 AND 10000 AND price >= 0.90)"


def pencils() -> Market:
    """The demo's pencils market (fixtures/demo.json), committed."""
    demo = json.loads((ROOT / "fixtures" / "demo.json").read_text())
    spec = next(m for m in demo["markets"] if m["subject"] == SUBJECT)
    return market_create(
        subject=spec["subject"],
        title=spec["title"],
        description=spec["description"],
        schema=spec["schema"],
        tick=spec["tick"],
        pricing=spec["pricing"],
    )


def trading_history(market: Market, prices: list[str]) -> None:
    """Closed auctions through the services, each in a later second than the one before, so
    that the price chart (its trades' ``closed_at``) has a one-second candle for each and a
    backtest's chart (their events' ``time``) a point for each. Their lots (100 to 900) never
    meet the scenario's (1,000 and up)."""
    seller = UserFactory(username="early-seller")
    buyer = UserFactory(username="early-buyer")
    staff = StaffFactory(username="early-staff")
    after = None  # the second the next close must not come before
    for i, price in enumerate(prices):
        offer = offer_publish(
            seller=seller, market=market, constraint="lot BETWEEN 100 AND 900 AND price >= 0.80"
        )
        bid_place(
            buyer=buyer, market=market, constraint=f"lot = {100 * (i % 4 + 1)} AND price <= {price}"
        )
        # One trade per second, not an assertion: wait for the clock to pass into the second
        # after the last close's stamps (a fixed 1.1 s sleep waited 0.5 s more on average)
        while after is not None and (now := timezone.now()) < after:
            time.sleep((after - now).total_seconds())
        trade = offer_close(offer_id=offer.pk, staff=staff).trade
        stamps = [timezone.now()] if trade is None else [trade.closed_at]
        stamps += Event.objects.filter(subject=market.subject, type="trade").values_list(
            "time", flat=True
        )
        after = max(stamps).replace(microsecond=0) + dt.timedelta(seconds=1)


class Outage:
    """Cuts a browser context's WebSocket between the page and the server, and refuses new
    connections until it ends, as a network drop would."""

    def __init__(self, context):
        self.down = False
        self.open: list = []
        context.route_web_socket(re.compile(r"/ws/$"), self._route)

    def _route(self, ws) -> None:
        if self.down:
            ws.close(code=4000, reason="network down")
            return
        server = ws.connect_to_server()
        self.open.append((ws, server))

    def begin(self) -> None:
        self.down = True
        for ws, server in self.open:
            server.close()
            ws.close(code=4000, reason="network down")
        self.open.clear()

    def end(self) -> None:
        self.down = False


def post_bid(page, *, lot_from: str, lot_to: str, price: str) -> int:
    """Place a bid through the market page's generated form; returns the bid's id."""
    page.goto(f"/markets/{SUBJECT}/")
    page.get_by_role("tab", name="Buy: place a bid").click()
    form = page.locator('form.posting[data-side="bid"]')
    form.get_by_label("Lot size from", exact=True).fill(lot_from)
    form.get_by_label("Lot size to", exact=True).fill(lot_to)
    form.get_by_label("Highest price you pay").fill(price)
    expect(form.locator(".preview")).to_contain_text(
        f"lot BETWEEN {lot_from} AND {lot_to} AND price <= {price}"
    )
    form.get_by_role("button", name="Place bid").click()
    page.wait_for_url(re.compile(r"/account/#bid-\d+$"))
    return int(page.url.rsplit("-", 1)[1])


def test_seller_and_two_buyers_trade_and_staff_close_in_the_admin(new_page, live_stack):
    market = off_loop(pencils)
    off_loop(
        trading_history, market, ["0.96", "0.99", "0.97", "1.02", "1.06", "1.01", "1.04", "1.08"]
    )
    UserFactory(username="alice")
    UserFactory(username="bob")
    StaffFactory(username="stella", is_superuser=True)

    # A seller registers and posts the pencils offer through the form generated from the schema
    seller = new_page()
    seller.goto("/register/")
    seller.get_by_label("Username").fill("sam")
    seller.get_by_label("Password", exact=True).fill("graphite-Lead-2026")
    seller.get_by_label("Password confirmation").fill("graphite-Lead-2026")
    seller.get_by_role("button", name="Create account").click()
    expect(seller.locator(".top-right .who")).to_have_text("sam")
    seller.goto(f"/markets/{SUBJECT}/")
    form = seller.locator('form.posting[data-side="offer"]')
    form.get_by_label("Pricing").select_option("reserve")
    form.get_by_label("Tier 1 lot size from", exact=True).fill("1000")
    form.get_by_label("Tier 1 lot size to", exact=True).fill("10000")
    form.get_by_label("Tier 1 price", exact=True).fill("1.00")
    form.get_by_role("button", name="+ Add a price tier").click()
    form.get_by_label("Tier 2 lot size from", exact=True).fill("5000")
    form.get_by_label("Tier 2 lot size to", exact=True).fill("10000")
    form.get_by_label("Tier 2 price", exact=True).fill("0.90")
    expect(form.locator(".preview")).to_contain_text(PENCILS_OFFER)
    form.get_by_role("button", name="Post offer").click()
    seller.wait_for_url(re.compile(r"/offers/\d+/$"))
    offer_id = int(seller.url.rstrip("/").rsplit("/", 1)[1])
    offer = Offer.objects.get(pk=offer_id)
    assert (offer.seller.username, offer.state, offer.constraint_text) == (
        "sam",
        "open",
        PENCILS_OFFER,
    )
    expect(seller.locator(".terms-table tbody tr")).to_have_count(2)
    best = seller.locator(f'[data-best-value="{offer_id}"]')
    count = seller.locator(f'[data-bid-count="{offer_id}"]')
    expect(best).to_have_text("—")
    expect(seller.locator("#live-status")).to_have_attribute("data-state", "open")
    seller.evaluate("window.notReloaded = true")

    # The first buyer bids from her own browser and becomes the best bidder
    alice = new_page()
    outage = Outage(alice.context)
    login(alice, "alice", form=True)
    alice_bid = post_bid(alice, lot_from="2000", lot_to="5000", price="1.10")
    expect(alice.locator(f"#bid-{alice_bid}")).to_contain_text("you are best")

    # The seller's page shows the new best value without a reload
    expect(best).to_have_text("1.10")
    expect(count).to_have_text("1")
    assert seller.evaluate("window.notReloaded") is True

    # Alice's connection drops; while she is away the second buyer outbids her
    expect(alice.locator("#live-status")).to_have_attribute("data-state", "open")
    alice.evaluate("window.notReloaded = true")
    outage.begin()
    expect(alice.locator("#live-status")).to_have_attribute("data-state", "reconnecting")
    bob = new_page()
    login(bob, "bob", form=True)
    bob_bid = post_bid(bob, lot_from="2000", lot_to="5000", price="1.20")
    expect(bob.locator(f"#bid-{bob_bid}")).to_contain_text("you are best")
    expect(best).to_have_text("1.20")
    expect(count).to_have_text("2")

    # Back online, alice's page resumes her notifications after the last one it saw
    outage.end()
    expect(alice.locator("#live-status")).to_have_attribute("data-state", "open")
    expect(alice.locator("#notes-list")).to_contain_text(
        f"Bid #{alice_bid} was outbid on offer #{offer_id}: the best bid is now 1.20 EUR."
    )
    expect(alice.locator(f"#bid-{alice_bid}")).to_contain_text("outbid")
    assert alice.evaluate("window.notReloaded") is True
    screenshot(alice, "account-outbid", docs="account")

    market_page = seller.context.new_page()
    market_page.goto(f"/markets/{SUBJECT}/")
    expect(market_page.locator(f'[data-best-value="{offer_id}"]')).to_have_text("1.20")
    expect(market_page.locator('[data-chart="candles"]')).to_have_attribute("data-drawn", "8")
    screenshot(market_page, "market", docs="market")
    expect(seller.locator('[data-chart="line"]')).to_have_attribute(
        "data-drawn", re.compile(r"[1-9]")
    )
    screenshot(seller, "offer")

    # Staff close the auction in the admin console, after a confirmation page
    staff = new_page()
    staff.goto("/admin/login/?next=/admin/exchange/offer/")
    staff.get_by_label("Username").fill("stella")
    staff.get_by_label("Password").fill("pw-for-tests-1")
    staff.get_by_role("button", name="Log in").click()
    staff.goto("/admin/exchange/offer/?state__exact=open")
    staff.locator(f'input[name="_selected_action"][value="{offer_id}"]').check()
    staff.locator('select[name="action"]').select_option("close_auctions")
    staff.get_by_role("button", name="Go").click()
    expect(staff.locator("#content table")).to_contain_text(f"bid {bob_bid} by bob")
    screenshot(staff, "admin-close-confirmation")
    staff.get_by_role("button", name="Yes, close 1 auction").click()
    expect(staff.locator(".messagelist")).to_contain_text("Closed 1 auction: 1 sold, 0 unsold.")
    trade = Trade.objects.get(offer_id=offer_id)
    assert (trade.bid_id, trade.buyer.username, str(trade.price), trade.quantity) == (
        bob_bid,
        "bob",
        "1.2000000000",
        5000,
    )
    assert Bid.objects.get(pk=bob_bid).state == "filled"

    # Both parties see the trade on the pages they have open, without reloading them
    expect(seller.locator("#offer-result")).to_contain_text("bob")
    expect(seller.locator("#offer-state")).to_have_text("Closed")
    assert seller.evaluate("window.notReloaded") is True
    expect(bob.locator("#trades")).to_contain_text("sam")
    expect(bob.locator(f"#trade-{trade.pk}")).to_contain_text("bought")
    expect(bob.locator("#notes-list")).to_contain_text(
        f"Won: bid #{bob_bid} won the auction of offer #{offer_id}, 5,000 pencils at 1.20 EUR, "
        "6,000.00 EUR in all."
    )
    expect(bob.locator(f"#bid-{bob_bid}")).to_contain_text("filled")
    screenshot(bob, "account-trade")
    seller.goto("/account/")
    expect(seller.locator(f"#trade-{trade.pk}")).to_contain_text("sold")
    expect(seller.locator(f"#trade-{trade.pk}")).to_contain_text("bob")
    assert new_page.errors == []


def test_posting_form_points_at_the_error_in_a_bad_constraint(new_page, live_stack):
    off_loop(pencils)
    UserFactory(username="carol")
    page = new_page()
    login(page, "carol")
    page.goto(f"/markets/{SUBJECT}/")
    form = page.locator('form.posting[data-side="offer"]')
    form.get_by_text("Advanced: write the constraint yourself").click()
    box = form.get_by_label("Constraint", exact=True)
    status = form.locator("[data-check-status]")

    # Checked as it is typed: the message names the line and column, the text is marked there
    box.press_sequentially("lot BETWEEN 1000 AND price >= 1.00", delay=10)
    expect(status.locator(".check-bad")).to_have_attribute("data-error-position", "21")
    expect(status).to_contain_text("expected a value after the keyword AND")
    expect(status).to_contain_text("line 1, column 22")
    expect(form.locator("[data-mirror] mark.err")).to_have_text("price")
    expect(box).to_have_attribute("aria-invalid", "true")
    screenshot(page, "posting-form-error")

    # Corrected, it is valid; the market's own rules are checked too (the tick)
    box.fill("lot BETWEEN 1000 AND 10000 AND price >= 1.00")
    expect(status.locator(".check-ok")).to_contain_text("Valid")
    expect(box).not_to_have_attribute("aria-invalid", "true")
    box.fill("lot BETWEEN 1000 AND 10000 AND price >= 1.005")
    expect(status.locator(".check-bad")).to_have_attribute("data-error-code", "off_tick")

    # Posted anyway, it is refused with the same mark, and nothing is stored
    form.get_by_role("button", name="Post offer").click()
    expect(page.locator(".form-error")).to_contain_text("is not on this market's tick")
    expect(page.locator("[data-mirror] mark.err")).to_have_text("price")
    assert Offer.objects.count() == 0


EXTERNAL_JS = """() => {
  const urls = [];
  for (const el of document.querySelectorAll('script[src], img[src], iframe[src], source[src], video[src], audio[src], embed[src]')) urls.push(el.getAttribute('src'));
  for (const el of document.querySelectorAll('link[href]')) urls.push(el.getAttribute('href'));
  for (const el of document.querySelectorAll('script[type=importmap]')) urls.push(...Object.values(JSON.parse(el.textContent).imports || {}));
  return urls.filter((u) => /^(https?:)?\\/\\//i.test(u));
}"""
WIDE_JS = """() => [...document.querySelectorAll('body *')]
  .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1)
  .slice(0, 5).map((el) => el.outerHTML.slice(0, 100))"""
UNLABELLED_JS = """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
  .filter((el) => !el.closest('[hidden]') && !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
          && !(el.tagName === 'BUTTON' && el.textContent.trim()) && !(el.type === 'submit' && el.value))
  .map((el) => el.outerHTML.slice(0, 120))"""


def test_pages_load_nothing_from_outside_label_their_fields_and_fit_a_phone(new_page, live_stack):
    market = off_loop(pencils)
    off_loop(
        market_create, subject="freight.road.pallets", title="Road freight", schema=market.schema
    )
    seller = UserFactory(username="erin")
    offer = off_loop(offer_publish, seller=seller, market=market, constraint=PENCILS_OFFER)
    page = new_page(width=390, height=844)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))

    def check(path: str) -> None:
        page.goto(path)
        page.wait_for_load_state("load")
        assert page.evaluate(EXTERNAL_JS) == [], path
        assert page.evaluate(UNLABELLED_JS) == [], path
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, (
            path,
            page.evaluate(WIDE_JS),
        )

    for path in ("/login/", "/register/"):
        check(path)
    login(page, "erin")
    for path in (
        "/",
        f"/markets/{SUBJECT}/",
        f"/markets/{SUBJECT}/post/?side=offer",
        f"/markets/{SUBJECT}/post/?side=bid",
        f"/offers/{offer.pk}/",
        "/account/",
    ):
        check(path)

    # Search narrows the subject tree as you type
    page.goto("/")
    page.get_by_label("Search markets").fill("freight")
    expect(page.locator("#market-tree")).not_to_contain_text("Pencils")
    expect(page.locator("#market-tree")).to_contain_text("Road freight")

    # The side tabs work from the keyboard
    page.goto(f"/markets/{SUBJECT}/")
    page.get_by_role("tab", name="Sell: post an offer").focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Buy: place a bid")).to_be_focused()
    expect(page.locator("#panel-bid")).to_be_visible()
    expect(page.locator("#panel-offer")).to_be_hidden()

    # API token: created (shown once), regenerated, revoked
    page.goto("/account/#token")
    page.get_by_role("button", name="Create a token").click()
    key = page.get_by_label("Token", exact=True).input_value()
    assert re.fullmatch(r"[0-9a-f]{40}", key)
    page.goto("/account/")
    expect(page.locator("#token")).to_contain_text(f"…{key[-4:]}")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke").click()
    expect(page.locator("#token")).to_contain_text("You have no API token.")

    origins = (live_stack.url, live_stack.ws_url.rstrip("/").rsplit("/", 1)[0])
    outside = [
        url for url in requested if not url.startswith(origins) and not url.startswith("data:")
    ]
    assert outside == []
    assert new_page.errors == []
