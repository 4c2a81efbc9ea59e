"""What an offer's page states (issue 22, item 3), through Django's test client: a closed
offer's outcome, price, quantity, total and (to its parties) buyer, with no live field left;
prices with the market's currency and totals; the seller's anonymised depth of matching bids;
a deadline marked for the live countdown."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from exchange.selectors import ui
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_cancel, offer_publish, offer_withdraw
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db

OFFER = "lot BETWEEN 1000 AND 10000 AND price >= 1.00"


def text(html: str) -> str:
    """The page's visible words, tags dropped and white space collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture
def book():
    market = pencils_market()
    seller = UserFactory(username="sam")
    offer = offer_publish(seller=seller, market=market, constraint=OFFER)
    ann, ben = UserFactory(username="ann"), UserFactory(username="ben")
    # The case: 1.18 x 8,000 leads over 1.15 x 10,000, and the seller can tell
    bid_place(buyer=ann, market=market, constraint="lot = 8000 AND price <= 1.18")
    bid_place(buyer=ben, market=market, constraint="lot BETWEEN 9000 AND 10000 AND price <= 1.15")
    matching_cycle_run()
    return market, seller, offer, ann, ben


def test_the_seller_sees_the_depth_with_quantities_and_totals(book, client):
    _market, seller, offer, ann, _ben = book
    assert ui.offer_depth(offer=offer) == [
        {"rank": 1, "value": "1.18", "quantity": 8000, "total": "9440.00"},
        {"rank": 2, "value": "1.15", "quantity": 10000, "total": "11500.00"},
    ]
    client.force_login(seller)
    page = client.get(f"/offers/{offer.pk}/").content.decode()
    assert (
        '<tr data-depth="1"><th scope="row">1</th><td class="num">1.18</td>'
        '<td class="num">8,000</td><td class="num">9,440.00</td></tr>'
    ) in page
    assert "Total (EUR)" in page and "Quantity (pencils)" in page
    assert "Best bid (EUR)" in page
    # Anonymised: neither buyer's name nor their terms
    assert "ann" not in text(page) and "lot = 8000" not in page
    # A bidder (and anyone else) does not get the depth
    client.force_login(ann)
    assert 'id="depth"' not in client.get(f"/offers/{offer.pk}/").content.decode()
    client.logout()
    assert 'id="depth"' not in client.get(f"/offers/{offer.pk}/").content.decode()


def test_a_sold_offer_states_its_outcome_and_no_live_field(book, client):
    _market, seller, offer, _ann, _ben = book
    offer_close(offer_id=offer.pk, staff=StaffFactory())
    for user, buyer_shown in ((seller, True), (UserFactory(), False), (None, False)):
        if user is None:
            client.logout()
        else:
            client.force_login(user)
        page = client.get(f"/offers/{offer.pk}/").content.decode()
        words = text(page)
        assert ("Outcome Sold to ann" in words) is buyer_shown
        assert "Outcome Sold" in words
        assert "Price 1.18 EUR" in words
        assert "Quantity 8,000 pencils" in words
        assert "Total 9,440.00 EUR" in words
        for stale in ("data-best-value", "data-bid-count", "when staff close it", 'id="depth"'):
            assert stale not in page, stale


@pytest.mark.parametrize(
    "end, outcome",
    [
        ("withdraw", "Withdrawn by the seller"),
        ("cancel", "Cancelled by staff"),
        ("close", "Closed unsold: no bid matched when it closed"),
    ],
)
def test_an_offer_that_ended_otherwise_says_how(client, end, outcome):
    market = pencils_market()
    seller = UserFactory()
    offer = offer_publish(seller=seller, market=market, constraint=OFFER)
    if end == "withdraw":
        offer_withdraw(seller=seller, offer_id=offer.pk)
    elif end == "cancel":
        offer_cancel(staff=StaffFactory(), offer_id=offer.pk)
    else:
        offer_close(offer_id=offer.pk, staff=StaffFactory())
    page = client.get(f"/offers/{offer.pk}/").content.decode()
    assert f"Outcome {outcome}" in text(page)
    for stale in ("data-best-value", "data-bid-count", "when staff close it"):
        assert stale not in page, stale


def test_trades_show_currency_quantity_unit_and_total(book, client):
    market, _seller, offer, _ann, _ben = book
    offer_close(offer_id=offer.pk, staff=StaffFactory())
    page = client.get(f"/markets/{market.subject}/").content.decode()
    assert '<td class="num" data-label="Price">1.18 EUR</td>' in page
    assert '<td class="num" data-label="Quantity">8,000 pencils</td>' in page
    assert '<td class="num" data-label="Total">9,440.00 EUR</td>' in page


def test_a_deadline_is_marked_for_the_countdown_and_pricing_is_named(client):
    market = pencils_market()
    closes = timezone.now() + dt.timedelta(hours=2)
    auction = offer_publish(seller=UserFactory(), market=market, constraint=OFFER, closes_at=closes)
    fixed = offer_publish(
        seller=UserFactory(), market=market, constraint="lot BETWEEN 1 AND 5 AND price = 2.00"
    )
    page = client.get(f"/offers/{auction.pk}/").content.decode()
    assert f'<time datetime="{closes.isoformat(timespec="microseconds")}" data-countdown>' in page
    assert "auction: the winner pays its bid" in page
    page = client.get(f"/offers/{fixed.pk}/").content.decode()
    assert "fixed price: first come, first served" in page
    assert "How a fixed-price offer works" in page
    assert "when staff close it" in page
