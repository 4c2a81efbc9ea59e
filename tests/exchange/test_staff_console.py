"""The staff console (issue 22, item 4): the dashboard lists every open auction with its
winner-to-be in a fixed number of queries, and is linked from the site header and the admin;
an open offer's admin page has Close and Cancel leading to the confirmation page; the admin
writes prices and quantities as the market does and titles orders by the market's subject."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import exchange.views.dashboard as dashboard_view
from exchange.models import Offer, Trade
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    client.force_login(StaffFactory(is_superuser=True, username="root"))
    return client


def _cells(page: str, offer_id: int) -> list[str]:
    """The text of the cells of the dashboard's row for ``offer_id``."""
    row = re.search(rf"<tr><td><a [^>]*>offer {offer_id}</a></td>(.*?)</tr>", page, re.S)
    assert row is not None, f"no row for offer {offer_id}"
    return [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row[1], re.S)
    ]


def test_the_dashboard_lists_every_open_auction_deadline_or_not(staff_client):
    first = pencils_market()
    second = pencils_market(subject="office.supplies.pens", pricing="second")
    seller = UserFactory(username="sam")
    soon = timezone.now() + dt.timedelta(hours=1)
    by_hand = offer_publish(seller=seller, market=first, constraint="lot = 8000 AND price >= 1.00")
    timed = offer_publish(
        seller=seller, market=second, constraint="lot = 500 AND price >= 0.50", closes_at=soon
    )
    unsold = offer_publish(seller=seller, market=first, constraint="lot = 1 AND price >= 9.00")
    closed = offer_publish(seller=seller, market=first, constraint="lot = 2 AND price >= 0.10")
    bid_place(
        buyer=UserFactory(username="carol"), market=first, constraint="lot = 8000 AND price <= 1.18"
    )
    bid_place(
        buyer=UserFactory(username="frank"), market=first, constraint="lot = 2 AND price <= 0.2"
    )
    bid_place(buyer=UserFactory(username="dan"), market=second, constraint="price <= 0.80")
    bid_place(buyer=UserFactory(username="erin"), market=second, constraint="price <= 0.70")
    matching_cycle_run()
    offer_close(offer_id=closed.pk, staff=None)

    page = staff_client.get("/staff/").content.decode()

    assert "Open auctions: the winner-to-be" in page
    # Those with a deadline first, then the others by age; closed offers are not listed.
    order = [int(pk) for pk in re.findall(r">offer (\d+)</a></td><td>office", page)]
    assert order == [timed.pk, by_hand.pk, unsold.pk]
    assert _cells(page, timed.pk) == [
        "office.supplies.pens",
        "sam",
        f"{soon:%Y-%m-%d %H:%M} UTC",
        f"bid {Offer.objects.get(pk=timed.pk).best.bid_id} by dan",
        "0.80 EUR",
        "0.71 EUR",  # second price: the runner-up's 0.70 plus the tick
        "500 pencils",
        "Close…",  # the row's button to the admin's confirmation page
    ]
    assert _cells(page, by_hand.pk)[2:] == [
        "when staff close it",
        f"bid {Offer.objects.get(pk=by_hand.pk).best.bid_id} by carol",
        "1.18 EUR",
        "1.18 EUR",
        "8,000 pencils",
        "Close…",
    ]
    assert _cells(page, unsold.pk)[2:] == [
        "when staff close it",
        "no matching bid (would close unsold)",
        "Close…",
    ]
    assert "more open offer" not in page


def test_the_dashboard_says_how_many_auctions_it_leaves_out(staff_client, monkeypatch):
    market = pencils_market()
    for lot in range(1, 4):
        offer_publish(seller=UserFactory(), market=market, constraint=f"lot = {lot} AND price >= 1")
    monkeypatch.setattr(dashboard_view, "AUCTIONS_SHOWN", 2)

    page = staff_client.get("/staff/").content.decode()

    assert len(re.findall(r">offer \d+</a></td><td>office", page)) == 2
    assert "1 more open offer: see" in page
    assert 'href="/admin/exchange/offer/?state__exact=open"' in page


def _markets():
    return [pencils_market(), pencils_market(subject="office.supplies.pens", pricing="second")]


def _book(markets, offers: range) -> None:
    """Open auctions over ``markets`` (first and second price), one per number in
    ``offers``, some with a deadline, each with two matching bids from different buyers,
    matched."""
    for i in offers:
        market = markets[i % 2]
        offer_publish(
            seller=UserFactory(),
            market=market,
            constraint=f"lot = {i + 1} AND price >= 1.00",
            closes_at=timezone.now() + dt.timedelta(hours=i + 1) if i % 3 == 0 else None,
        )
        for limit in ("1.50", "1.40"):
            bid_place(
                buyer=UserFactory(),
                market=market,
                constraint=f"lot = {i + 1} AND price <= {limit}",
            )
    matching_cycle_run()


def _dashboard_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/staff/")
    assert response.status_code == 200
    return len(queries)


def test_the_dashboard_takes_as_many_queries_for_forty_auctions_as_for_two(staff_client):
    markets = _markets()
    _book(markets, range(2))
    two = _dashboard_queries(staff_client)
    _book(markets, range(2, 40))
    assert _dashboard_queries(staff_client) == two


def test_the_dashboard_stays_within_its_query_budget_over_many_auctions(
    staff_client, django_assert_max_num_queries
):
    _book(_markets(), range(40))
    # 17 for the auctions (2 of them the winners-to-be's spending limits and commitments)
    # and the rest, 10 for SPEC 8's panel (test_dashboard_spec8.py), 3 for the
    # subscriptions behind the log and the engine's partitions and processes, in either
    # mode (test_dashboard_lag.py)
    with django_assert_max_num_queries(30):
        response = staff_client.get("/staff/")
    page = response.content.decode()
    assert len(re.findall(r">offer \d+</a></td><td>office", page)) == 40
    assert len(re.findall(r"<td>bid \d+ by trader\d+</td>", page)) == 40


# -- links ----------------------------------------------------------------------------------


def test_the_site_header_links_staff_to_the_dashboard_and_nobody_else(client):
    pencils_market()
    client.force_login(UserFactory())
    assert 'href="/staff/"' not in client.get("/").content.decode()
    client.force_login(StaffFactory())
    header = client.get("/").content.decode()
    assert '<a href="/staff/">Staff dashboard</a> <a href="/admin/">Admin console</a>' in header


def test_the_admin_links_to_the_dashboard_from_its_index_and_header(staff_client):
    index = staff_client.get("/admin/").content.decode()
    assert '<li><a href="/staff/">Staff dashboard</a>: matching health' in index
    assert '<a href="/staff/">Dashboard</a> / <a href="/">Site</a>' in index
    assert "<title>Site administration | Intersect admin console</title>" in index


# -- the offer's admin page -----------------------------------------------------------------


def _open_offer_with_bid():
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(username="sam"), market=market, constraint="lot = 8000 AND price >= 1"
    )
    bid = bid_place(buyer=UserFactory(username="carol"), market=market, constraint="price <= 1.18")
    matching_cycle_run()
    return offer, bid


def _buttons(page: str) -> list[tuple[str, str]]:
    """The (action, offer id) of each action form on an offer's admin page."""
    return re.findall(
        r'<input type="hidden" name="action" value="(\w+)">\s*'
        r'<input type="hidden" name="_selected_action" value="(\d+)">',
        page,
    )


def test_an_open_offers_admin_page_has_close_and_cancel_and_the_subject_in_its_title(
    staff_client,
):
    offer, _ = _open_offer_with_bid()
    page = staff_client.get(f"/admin/exchange/offer/{offer.pk}/change/").content.decode()
    assert _buttons(page) == [("close_auctions", str(offer.pk)), ("cancel_offers", str(offer.pk))]
    assert 'action="/admin/exchange/offer/"' in page
    assert ">Close…</button>" in page and ">Cancel…</button>" in page
    assert f"<h2>offer {offer.pk} in office.supplies.pencils</h2>" in page
    assert f"<title>offer {offer.pk} in office.supplies.pencils | Change offer" in page


def test_a_closed_offers_admin_page_has_no_buttons(staff_client):
    offer, _ = _open_offer_with_bid()
    offer_close(offer_id=offer.pk, staff=None)
    page = staff_client.get(f"/admin/exchange/offer/{offer.pk}/change/").content.decode()
    assert _buttons(page) == []


@pytest.mark.parametrize(
    ("action", "heading", "button"),
    [
        ("close_auctions", "Closing is final.", "Yes, close 1 auction"),
        ("cancel_offers", "Cancelling is final.", "Yes, cancel 1 offer"),
    ],
)
def test_the_buttons_lead_to_the_confirmation_page_and_change_nothing(
    staff_client, action, heading, button
):
    offer, bid = _open_offer_with_bid()
    confirm = staff_client.post(
        "/admin/exchange/offer/", {"action": action, "_selected_action": str(offer.pk)}
    )
    page = confirm.content.decode()
    assert confirm.status_code == 200
    assert heading in page and f'value="{button}"' in page
    assert (
        f"<td>bid {bid.pk} by carol</td><td>1.18 EUR</td><td>1.18 EUR</td><td>8,000 pencils</td>"
        in page
    )
    assert Offer.objects.get(pk=offer.pk).state == "open"
    assert not Trade.objects.exists()


# -- numbers --------------------------------------------------------------------------------


def test_the_trade_list_and_page_write_numbers_as_the_market_does(staff_client):
    offer, _ = _open_offer_with_bid()
    trade = offer_close(offer_id=offer.pk, staff=None).trade
    assert trade is not None and str(trade.price) == "1.1800000000"

    listing = staff_client.get("/admin/exchange/trade/").content.decode()
    page = staff_client.get(f"/admin/exchange/trade/{trade.pk}/change/").content.decode()

    assert '<td class="field-price_shown">1.18 EUR</td>' in listing
    assert '<td class="field-quantity_shown">8,000 pencils</td>' in listing
    assert '<div class="readonly">1.18 EUR</div>' in page
    assert '<div class="readonly">8,000 pencils</div>' in page
    for shown in (listing, page):
        assert "1.1800000000" not in shown and "8000.0000000000" not in shown


def test_the_offer_list_writes_the_best_value_as_the_market_does(staff_client):
    offer, _ = _open_offer_with_bid()
    listing = staff_client.get("/admin/exchange/offer/").content.decode()
    assert '<td class="field-best_value">1.18 EUR</td>' in listing
