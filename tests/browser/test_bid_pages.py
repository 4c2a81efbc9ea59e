"""A bid's story on the pages (issue 39, item 2), through Django's test client: the minimum
next bid pre-filled and shown, a bid behind only its buyer's own better bid said so, the
outcome of a closed auction on the account page, and each bid's own page with its history
(its owner and staff only)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from exchange.models import SpendingLimit
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_amend, bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db


@pytest.fixture
def auction():
    """Offer 5,000 pencils from 1.00; bea bids 1.05 (best) then amends to 1.06, ann bids
    1.15 and also 1.10 (behind her own 1.15) before the next cycle."""
    market = pencils_market()
    sam, bea, ann = (UserFactory(username=n) for n in ("sam", "bea", "ann"))
    offer = offer_publish(seller=sam, market=market, constraint="lot <= 5000 AND price >= 1.00")
    bea_bid = bid_place(buyer=bea, market=market, constraint="lot = 500 AND price <= 1.05")
    matching_cycle_run()
    bea_bid = bid_amend(
        buyer=bea, bid_id=bea_bid.pk, constraint="lot = 500 AND price <= 1.06", version=1
    )
    ann_best = bid_place(buyer=ann, market=market, constraint="lot = 500 AND price <= 1.15")
    ann_two = bid_place(buyer=ann, market=market, constraint="lot = 400 AND price <= 1.10")
    matching_cycle_run()
    return market, offer, (sam, bea, ann), (bea_bid, ann_best, ann_two)


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())).strip()


def test_forms_prefill_and_pages_show_the_minimum_next_bid(auction, client):
    _market, offer, (_sam, bea, ann), (bea_bid, _ann_best, ann_two) = auction
    client.force_login(bea)
    account = client.get("/account/").content.decode()
    # Raise to: the best bid (1.15) plus a tick, not bea's own 1.06 plus a tick
    assert (
        f'id="raise-{bea_bid.pk}-a" name="price" type="number" inputmode="decimal" value="1.16"'
        in account
    )
    assert 'enter <span class="num">1.16</span> or more to lead' in account
    page = client.get(f"/offers/{offer.pk}/").content.decode()
    assert (
        f'id="raise-{bea_bid.pk}-o" name="price" type="number" inputmode="decimal" value="1.16"'
        in page
    )
    # Bid on this tier: the minimum next bid, not the reserve of 1.00
    form = client.get(f"/markets/office.supplies.pencils/post/?side=bid&offer={offer.pk}&tier=1")
    assert re.search(r'name="price"[^>]*value="1.16"', form.content.decode())

    # ann's 1.10 is behind her own 1.15 only: it says so, with no Raise form
    client.force_login(ann)
    account = client.get("/account/").content.decode()
    row = account[account.index(f'id="bid-{ann_two.pk}"') :]
    row = row[: row.index("</tr>")]
    assert 'data-standing="behind-own">behind your own better bid' in row
    assert 'data-standing="outbid"' not in row, row
    # a raise is still offered (any bid may be raised), from its own limit plus a tick
    assert 'value="1.11" min="1.11"' in row


def test_after_closing_the_losers_bid_reads_how_the_auction_ended(auction, client):
    _market, offer, (_sam, bea, _ann), (bea_bid, _ann_best, _ann_two) = auction
    offer_close(offer_id=offer.pk, staff=StaffFactory())
    client.force_login(bea)
    account = client.get("/account/").content.decode()
    row = account[account.index(f'id="bid-{bea_bid.pk}"') :]
    row = text_of(row[: row.index("</tr>")])
    assert f"active · offer #{offer.pk} auction ended, you did not win (won at 1.15)" in row
    assert "no matching open offer now" in row
    assert (
        f"Auction ended, you did not win: offer #{offer.pk} went to another bid at 1.15 EUR "
        f"(bid #{bea_bid.pk})." in text(client.get("/account/"))
    )


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html)).strip()


def test_a_bid_page_tells_its_story_to_its_owner_and_staff_only(auction, client):
    _market, offer, (sam, bea, ann), (bea_bid, ann_best, _ann_two) = auction
    offer_close(offer_id=offer.pk, staff=StaffFactory(username="stella"))
    url = f"/bids/{bea_bid.pk}/"

    client.force_login(bea)
    page = client.get(url)
    assert page.status_code == 200
    history = text_of(page.content.decode().split('id="bid-history"')[1])
    steps = [
        "Placed (version 1).",
        f"Bid #{bea_bid.pk} is now the best bid on offer #{offer.pk} at 1.05 EUR.",
        "Amended: now version 2.",
        f"Bid #{bea_bid.pk} was outbid on offer #{offer.pk}: the best bid is now 1.15 EUR.",
        f"Auction ended, you did not win: offer #{offer.pk} went to another bid at 1.15 EUR "
        f"(bid #{bea_bid.pk}).",
    ]
    positions = [history.index(step) for step in steps]
    assert positions == sorted(positions)
    assert 'data-outcome="lost"' in page.content.decode()

    # the winner's page says it won
    client.force_login(ann)
    won = client.get(f"/bids/{ann_best.pk}/").content.decode()
    assert 'data-outcome="won"' in won and f"Won: bid #{ann_best.pk} won the auction" in won

    # staff see it; the seller, another buyer and a stranger do not: a 404, as for no bid
    client.force_login(StaffFactory(username="sid"))
    assert client.get(url).status_code == 200
    for user in (sam, ann):
        client.force_login(user)
        assert client.get(url).status_code == 404
    client.logout()
    assert client.get(url).status_code == 404
    assert client.get("/bids/999999/").status_code == 404
    assert client.get("/bids/x/").status_code == 404


def test_a_raise_past_the_spending_limit_is_refused_in_words(auction, client):
    _market, _offer, (_sam, bea, _ann), (bea_bid, _ann_best, _ann_two) = auction
    SpendingLimit.objects.create(user=bea, amount=Decimal("560"))
    client.force_login(bea)
    answer = client.post(f"/bids/{bea_bid.pk}/raise/", {"version": 2, "price": "1.16"}, follow=True)
    assert (
        f"Bid #{bea_bid.pk} is not raised: Bid refused: it could win 500 at 1.16, 580.00 in "
        "all, but 560.00 is left of your spending limit of 560.00 (your other active bids "
        "could cost 0.00). Lower its price or give it an upper quantity of at most 482."
    ) in text_of(answer.content.decode())
    bea_bid.refresh_from_db()
    assert (bea_bid.version, bea_bid.constraint_text) == (2, "lot = 500 AND price <= 1.06")


def test_the_account_page_shows_the_spending_limit_and_what_is_left(auction, client):
    _market, _offer, (_sam, bea, _ann), _bids = auction
    client.force_login(bea)
    page = text_of(client.get("/account/").content.decode())
    assert (
        "Spending limit 100,000.00; your active bids commit 530.00 (each as it could cost "
        "when placed or last amended); 99,470.00 left. A bid that could cost more than is left is "
        "refused."
    ) in page
