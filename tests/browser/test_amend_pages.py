"""Amending from the web UI through Django's test client (issue 22, item 1): editing an
offer or a bid, raising a bid by at least a tick, the 409 of a stale version in words,
"Bid on this" pre-filling the bid form, open exposure and withdrawing all bids of a market.

The browser journeys are in ``test_amend_ui.py``; here every outcome, including that a
refused change changes nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils.html import escape

from exchange.models import Bid, Offer, OrderChange, SpendingLimit
from exchange.selectors import ui
from exchange.selectors.limits import buyer_room
from exchange.selectors.markets import market_schema
from exchange.services.orders import bid_amend, bid_place, bid_withdraw, offer_publish
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db

TIERS = "(lot BETWEEN 1000 AND 10000 AND price >= 1.00) OR (lot BETWEEN 5000 AND 10000 AND price = 0.90)"


def snapshot(order: Offer | Bid) -> tuple:
    order.refresh_from_db()
    return order.constraint_text, order.version, order.state


@pytest.fixture
def book():
    market = pencils_market()
    seller, buyer = UserFactory(username="sam"), UserFactory(username="bea")
    offer = offer_publish(seller=seller, market=market, constraint=TIERS)
    bid = bid_place(
        buyer=buyer, market=market, constraint="lot BETWEEN 2000 AND 5000 AND price <= 1.10"
    )
    return market, seller, buyer, offer, bid


def test_a_raise_sets_every_tiers_limit_and_keeps_the_rest(book):
    market, _seller, buyer, _offer, _bid = book
    two = bid_place(
        buyer=buyer,
        market=market,
        constraint="(lot = 2000 AND price <= 1.05) OR (lot = 8000 AND price <= 0.95)",
    )
    schema = market_schema(market=market)
    assert ui.bid_next_price(bid=two, schema=schema) == "1.06"
    assert ui.bid_raised_text(bid=two, schema=schema, price="1.06") == (
        "(lot = 2000 AND price <= 1.06) OR (lot = 8000 AND price <= 1.06)"
    )


@pytest.mark.parametrize(
    "price, code, message",
    [
        (
            "1.10",
            "raise_too_small",
            "Raise by at least one tick: 1.11 or more (the bid pays up to 1.10 now).",
        ),
        (
            "1.05",
            "raise_too_small",
            "Raise by at least one tick: 1.11 or more (the bid pays up to 1.10 now).",
        ),
        ("1.115", "off_tick", "1.115 is not on this market's tick of 0.01."),
        ("lots", "invalid_price", "Enter the new price as a number."),
        ("NaN", "invalid_price", "Enter the new price as a number."),
        ("", "invalid_price", "Enter the new price as a number."),
    ],
)
def test_a_raise_below_a_tick_or_off_it_is_refused_in_words(book, client, price, code, message):
    _market, _seller, buyer, _offer, bid = book
    before, changes = snapshot(bid), OrderChange.objects.count()
    client.force_login(buyer)
    response = client.post(
        f"/bids/{bid.pk}/raise/",
        {"price": price, "version": "1", "next": "/account/#bids"},
        follow=True,
    )
    assert response.redirect_chain == [("/account/#bids", 302)]
    assert f"Bid #{bid.pk} is not raised: {message}" in response.content.decode().replace(
        "&#x27;", "'"
    )
    assert snapshot(bid) == before
    assert OrderChange.objects.count() == changes
    with pytest.raises(Exception) as exc:
        ui.bid_raised_text(bid=bid, schema=market_schema(market=bid.market), price=price)
    assert exc.value.code == code


def test_raising_amends_the_bid_and_a_stale_raise_is_explained(book, client):
    _market, _seller, buyer, _offer, bid = book
    client.force_login(buyer)
    response = client.post(f"/bids/{bid.pk}/raise/", {"price": "1.11", "version": "1"}, follow=True)
    assert response.redirect_chain == [(f"/account/#bid-{bid.pk}", 302)]
    assert f"Bid #{bid.pk} now pays up to 1.11 (version 2)." in response.content.decode()
    assert snapshot(bid) == ("lot BETWEEN 2000 AND 5000 AND price <= 1.11", 2, "active")

    # The same form again (version 1, as a second tab would send it): 409 in words
    response = client.post(f"/bids/{bid.pk}/raise/", {"price": "1.20", "version": "1"}, follow=True)
    page = response.content.decode()
    assert (
        escape(
            f"Bid #{bid.pk} was changed after this page was loaded, in another tab or by a program "
            "using your API token, so your change was not saved. It is now at version 2 (you were "
            "editing version 1)."
        )
        in page
    )
    assert snapshot(bid) == ("lot BETWEEN 2000 AND 5000 AND price <= 1.11", 2, "active")


def test_someone_elses_bid_cannot_be_raised_or_edited(book, client):
    _market, seller, _buyer, _offer, bid = book
    before = snapshot(bid)
    client.force_login(seller)
    assert (
        client.post(f"/bids/{bid.pk}/raise/", {"price": "2.00", "version": "1"}).status_code == 404
    )
    assert client.get(f"/bids/{bid.pk}/edit/").status_code == 404
    assert (
        client.post(
            f"/bids/{bid.pk}/edit/", {"constraint": "price <= 3.00", "version": "1"}
        ).status_code
        == 404
    )
    assert snapshot(bid) == before


def test_editing_an_offer_stale_and_invalid_then_saved(book, client):
    _market, seller, _buyer, offer, _bid = book
    client.force_login(seller)
    page = client.get(f"/offers/{offer.pk}/edit/").content.decode()
    assert '<input type="hidden" name="version" value="1">' in page
    assert f">{escape(TIERS)}</textarea>" in page

    # Invalid: the error and where it is, the form keeps the text, nothing changes
    bad = "lot BETWEEN 1000 AND 10000 AND price >= 1.005"
    response = client.post(f"/offers/{offer.pk}/edit/", {"constraint": bad, "version": "1"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "is not on this market&#x27;s tick of 0.01" in page
    assert "(line 1, column 32)" in page
    assert f">{escape(bad)}</textarea>" in page
    assert snapshot(offer) == (TIERS, 1, "open")

    # Saved: the new terms, version 2, back on the offer's page
    new = "lot BETWEEN 1000 AND 10000 AND price >= 0.95"
    response = client.post(f"/offers/{offer.pk}/edit/", {"constraint": new, "version": "1"})
    assert response.status_code == 302 and response["Location"] == f"/offers/{offer.pk}/"
    assert snapshot(offer) == (new, 2, "open")

    # Stale: 409, the explanation, and the current terms and version to start again from
    response = client.post(f"/offers/{offer.pk}/edit/", {"constraint": TIERS, "version": "1"})
    assert response.status_code == 409
    page = response.content.decode()
    assert (
        "so your change was not saved. It is now at version 2 (you were editing version 1)." in page
    )
    assert '<input type="hidden" name="version" value="2">' in page
    assert f">{escape(new)}</textarea>" in page
    assert snapshot(offer) == (new, 2, "open")


def test_bid_on_this_fills_the_bid_form_from_the_chosen_tier(book, client):
    market, seller, buyer, offer, _bid = book
    client.force_login(buyer)
    offer_page = client.get(f"/offers/{offer.pk}/").content.decode()
    link = f"/markets/{market.subject}/post/?side=bid&amp;offer={offer.pk}&amp;tier=2"
    assert link in offer_page
    page = client.get(link.replace("&amp;", "&")).content.decode()
    assert 'name="lot__min" type="text" value="5000"' in page
    assert 'name="lot__max" type="text" value="10000"' in page
    assert 'name="price" type="text" value="0.90"' in page
    # No tier given: the first; an offer of another market or a closed one: an empty form
    page = client.get(f"/markets/{market.subject}/post/?side=bid&offer={offer.pk}").content.decode()
    assert 'name="price" type="text" value="1.00"' in page
    assert 'name="lot__min" type="text" value="1000"' in page
    other = pencils_market(subject="office.supplies.pens")
    page = client.get(f"/markets/{other.subject}/post/?side=bid&offer={offer.pk}").content.decode()
    assert 'name="price" type="text" value=""' in page
    # The seller is not offered to bid on their own offer
    client.force_login(seller)
    assert "side=bid&amp;offer=" not in client.get(f"/offers/{offer.pk}/").content.decode()


def test_exposure_sums_the_largest_award_each_active_bid_commits(book, client):
    market, _seller, buyer, _offer, bid = book
    # room for the 900,000.00 bid that is placed and withdrawn below
    SpendingLimit.objects.create(user=buyer, amount=Decimal("1000000"))
    # 5,000 x 1.10 = 5,500.00; then max(2,000 x 1.05, 8,000 x 0.95) = 7,600.00; with no
    # upper lot, the offer's largest (10,000) at 2.00 = 20,000.00: the limit's own rule
    bid_place(
        buyer=buyer,
        market=market,
        constraint="(lot = 2000 AND price <= 1.05) OR (lot = 8000 AND price <= 0.95)",
    )
    open_ended = bid_place(buyer=buyer, market=market, constraint="lot >= 100 AND price <= 2.00")
    assert open_ended.largest_award == Decimal("20000.00")
    gone = bid_place(buyer=buyer, market=market, constraint="lot = 100000 AND price <= 9.00")
    bid_withdraw(buyer=buyer, bid_id=gone.pk)
    [exposure] = ui.user_exposure(user=buyer)
    assert (exposure.market, exposure.total, exposure.unit, exposure.bids, exposure.uncounted) == (
        market,
        "33100.00",
        "EUR",
        3,
        [],
    )
    # One source of truth: what the table sums is what the spending limit counts
    assert buyer_room(buyer_id=buyer.pk).committed == Decimal("33100.00")
    client.force_login(buyer)
    page = client.get("/account/").content.decode()
    assert "<span data-exposure-total>33,100.00</span> EUR" in page
    assert '<span class="num" data-committed>33,100.00</span>' in page
    assert f"Withdraw all my bids in {market.title}" in page
    # A bid placed before limits existed has no largest award: it commits nothing, said so
    Bid.objects.filter(pk=bid.pk).update(largest_award=None)
    [exposure] = ui.user_exposure(user=buyer)
    assert (exposure.total, exposure.bids, exposure.uncounted) == ("27600.00", 3, [bid.pk])
    assert buyer_room(buyer_id=buyer.pk).committed == Decimal("27600.00")
    page = client.get("/account/").content.decode()
    assert (f"and bid #{bid.pk}, placed before spending limits, counted as nothing") in page


def test_withdraw_all_bids_in_a_market_one_transaction_each(book, client):
    market, _seller, buyer, _offer, bid = book
    second = bid_place(buyer=buyer, market=market, constraint="lot = 3000 AND price <= 1.00")
    other_market = pencils_market(subject="office.supplies.pens")
    elsewhere = bid_place(
        buyer=buyer, market=other_market, constraint="lot = 3000 AND price <= 1.00"
    )
    stranger = bid_place(
        buyer=UserFactory(), market=market, constraint="lot = 3000 AND price <= 1.00"
    )
    client.force_login(buyer)
    response = client.post(f"/markets/{market.subject}/bids/withdraw/", follow=True)
    assert response.redirect_chain == [("/account/#bids", 302)]
    assert f"Withdrawn in Pencils: bids #{bid.pk}, #{second.pk}." in response.content.decode()
    states = dict(Bid.objects.values_list("pk", "state"))
    assert [states[b.pk] for b in (bid, second, elsewhere, stranger)] == [
        "withdrawn",
        "withdrawn",
        "active",
        "active",
    ]
    # Again: nothing left to withdraw, said so
    response = client.post(f"/markets/{market.subject}/bids/withdraw/", follow=True)
    assert "You have no active bids in Pencils." in response.content.decode()
    assert client.get(f"/markets/{market.subject}/bids/withdraw/").status_code == 405


def test_bid_amend_service_still_decides_the_version(book):
    # The UI's raise is the service's amend: a stale version from any client is refused alike.
    _market, _seller, buyer, _offer, bid = book
    bid_amend(buyer=buyer, bid_id=bid.pk, constraint="price <= 1.50", version=1)
    assert snapshot(bid) == ("price <= 1.50 AND int lot = *", 2, "active")
    assert ui.bid_limit(
        ui.constraint_parsed(text=bid.constraint_text, schema=market_schema(market=bid.market)),
        market_schema(market=bid.market),
    ) == Decimal("1.50")
