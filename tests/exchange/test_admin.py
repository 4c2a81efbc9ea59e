"""The staff console: closing with a confirmation page, cancelling, the schema editor, the dashboard."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from exchange.models import Market, Offer, Trade
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("strategy")]


@pytest.fixture
def staff_client(client):
    client.force_login(StaffFactory(is_superuser=True))
    return client


def test_close_action_confirms_the_winner_then_closes(staff_client):
    market = pencils_market(pricing="second")
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 100 AND price >= 1.00"
    )
    bid_place(buyer=UserFactory(username="alice"), market=market, constraint="price <= 1.40")
    bid_place(buyer=UserFactory(username="bob"), market=market, constraint="price <= 1.20")
    matching_cycle_run()
    form = {"action": "close_auctions", "_selected_action": [offer.pk]}

    confirm = staff_client.post("/admin/exchange/offer/", form)
    page = confirm.content.decode()
    assert confirm.status_code == 200
    assert "by alice" in page and "1.40" in page and "1.21" in page
    assert Offer.objects.get(pk=offer.pk).state == "open"

    done = staff_client.post("/admin/exchange/offer/", {**form, "confirm": "yes"}, follow=True)
    assert "Closed 1 auction: 1 sold, 0 unsold." in done.content.decode()
    trade = Trade.objects.get(offer=offer)
    assert (trade.buyer.username, trade.price, trade.quantity) == (
        "alice",
        Decimal("1.21"),
        Decimal(100),
    )


def test_cancel_action_confirms_then_cancels(staff_client):
    offer = offer_publish(
        seller=UserFactory(), market=pencils_market(), constraint="lot = 1 AND price = 1.00"
    )
    form = {"action": "cancel_offers", "_selected_action": [offer.pk]}

    confirm = staff_client.post("/admin/exchange/offer/", form)
    assert confirm.status_code == 200
    assert "Cancelling is final." in confirm.content.decode()
    assert 'value="Yes, cancel 1 offer"' in confirm.content.decode()
    assert Offer.objects.get(pk=offer.pk).state == "open"

    done = staff_client.post("/admin/exchange/offer/", {**form, "confirm": "yes"}, follow=True)
    assert "Cancelled 1 offer." in done.content.decode()
    assert Offer.objects.get(pk=offer.pk).state == "cancelled"


def schema_rows(rows):
    data = {"schema-rows": str(len(rows))}
    for i, row in enumerate(rows):
        for key, value in row.items():
            if isinstance(value, bool):
                if value:
                    data[f"schema-{i}-{key}"] = "on"
            else:
                data[f"schema-{i}-{key}"] = value or ""
    return data


def test_schema_editor_creates_a_market(staff_client):
    rows = [
        {
            "name": "lot",
            "type": "int",
            "label": "Lot",
            "unit": "",
            "required_on_offer": True,
            "required_on_bid": False,
            "role": "quantity",
        },
        {
            "name": "price",
            "type": "decimal",
            "label": "Price",
            "unit": "EUR",
            "required_on_offer": True,
            "required_on_bid": True,
            "role": "price",
        },
    ]
    response = staff_client.post(
        "/admin/exchange/market/add/",
        {
            "subject": "office.supplies.erasers",
            "title": "Erasers",
            "description": "",
            "tick": "0.05",
            "pricing": "first",
            **schema_rows(rows),
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    market = Market.objects.get(subject="office.supplies.erasers")
    assert [a["name"] for a in market.schema] == ["lot", "price"]
    assert market.schema[1]["unit"] == "EUR"


def test_schema_editor_refuses_a_schema_without_price(staff_client):
    rows = [
        {
            "name": "lot",
            "type": "int",
            "label": "Lot",
            "unit": "",
            "required_on_offer": True,
            "required_on_bid": False,
            "role": "quantity",
        }
    ]
    response = staff_client.post(
        "/admin/exchange/market/add/",
        {
            "subject": "office.supplies.rulers",
            "title": "Rulers",
            "description": "",
            "tick": "0.01",
            "pricing": "first",
            **schema_rows(rows),
        },
    )
    assert response.status_code == 200
    assert "Exactly one attribute must have the role price" in response.content.decode()
    assert not Market.objects.filter(subject="office.supplies.rulers").exists()


def test_schema_change_keeps_attributes_that_live_orders_use(staff_client):
    market = pencils_market()
    offer_publish(seller=UserFactory(), market=market, constraint="lot = 1 AND price = 1.00")
    rows = [
        {
            "name": "price",
            "type": "decimal",
            "label": "Price",
            "unit": "",
            "required_on_offer": True,
            "required_on_bid": True,
            "role": "price",
        }
    ]
    response = staff_client.post(
        f"/admin/exchange/market/{market.pk}/change/",
        {
            "title": "Pencils",
            "description": "",
            "tick": "0.01",
            "pricing": "first",
            **schema_rows(rows),
        },
    )
    assert response.status_code == 200
    assert "lot (int)" in response.content.decode()
    assert [a["name"] for a in Market.objects.get(pk=market.pk).schema] == ["lot", "price"]


def test_adding_an_attribute_widens_active_bids(staff_client):
    market = pencils_market()
    bid = bid_place(buyer=UserFactory(), market=market, constraint="price <= 1.00")
    rows = [dict(a) for a in market.schema] + [
        {
            "name": "grade",
            "type": "string",
            "label": "Grade",
            "unit": "",
            "required_on_offer": False,
            "required_on_bid": False,
            "role": None,
        }
    ]
    response = staff_client.post(
        f"/admin/exchange/market/{market.pk}/change/",
        {
            "title": "Pencils",
            "description": "",
            "tick": "0.01",
            "pricing": "first",
            **schema_rows(rows),
        },
    )
    assert response.status_code == 302
    bid.refresh_from_db()
    assert bid.constraint_text == "price <= 1.00 AND int lot = * AND string grade = *"


def test_dashboard_shows_cycle_health_and_winner_to_be(staff_client):
    market = pencils_market()
    offer_publish(
        seller=UserFactory(),
        market=market,
        constraint="lot = 5 AND price >= 1.00",
        closes_at=timezone.now() + dt.timedelta(hours=1),
    )
    bid_place(buyer=UserFactory(username="carol"), market=market, constraint="price <= 1.10")
    matching_cycle_run()
    page = staff_client.get("/staff/").content.decode()
    assert "2 changes" in page
    assert "by carol" in page and "1.10" in page
    assert "4 undelivered notifications" in page  # nothing was pushed: the test never commits


def test_dashboard_is_staff_only(client):
    client.force_login(UserFactory())
    assert client.get("/staff/").status_code == 302


def test_an_offers_page_offers_no_save_and_a_cycle_cannot_be_deleted(staff_client):
    # Given an offer and a cycle that took it in
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 100 AND price >= 1.00"
    )
    matching_cycle_run()

    # Then the offer's page shows its fields read-only, with no Save button (issue 39)
    page = staff_client.get(f"/admin/exchange/offer/{offer.pk}/change/").content.decode()
    assert 'name="_save"' not in page and 'name="_continue"' not in page
    assert 'name="_addanother"' not in page
    # and matching cycles, a record others rely on, offer no "Delete selected"
    cycles = staff_client.get("/admin/exchange/matchingcycle/").content.decode()
    assert "delete_selected" not in cycles


def test_the_close_confirmation_writes_numbers_for_people(staff_client):
    # Given a lot of 20,000 pencils bid at 0.26: 5,200.00 EUR
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 20000 AND price >= 0.20"
    )
    bid_place(buyer=UserFactory(username="alice"), market=market, constraint="price <= 0.26")
    matching_cycle_run()

    page = staff_client.post(
        "/admin/exchange/offer/", {"action": "close_auctions", "_selected_action": [offer.pk]}
    ).content.decode()

    assert "<td>20,000 pencils</td>" in page
    assert "<td>0.26 EUR</td>" in page
    assert 'value="Yes, close 1 auction"' in page
