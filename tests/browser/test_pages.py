"""The web UI's pages and forms through Django's test client (no browser, no worker): the
generated posting form, the constraint check, visibility rules and query budgets."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.http import QueryDict
from django.urls import reverse
from rest_framework.authtoken.models import Token

from exchange.market_rules import schema_parse
from exchange.models import Bid, Market, Offer
from exchange.selectors import ui
from exchange.services.orders import bid_place, offer_publish
from frontend.posting import PostingForm
from frontend.readable import readable
from frontend.templatetags.intersect import line_col, mark_at
from tests.factories import UserFactory, pencils_market

FREIGHT_SCHEMA = [
    {"name": "pallets", "type": "int", "label": "Pallets", "role": "quantity"},
    {"name": "delivery", "type": "date", "label": "Delivery"},
    {"name": "pickup", "type": "point", "label": "Pickup"},
    {"name": "area", "type": "box", "label": "Area"},
    {"name": "starts", "type": "timestamp", "label": "Starts"},
    {"name": "grade", "type": "string", "label": "Grade"},
    {"name": "price", "type": "decimal", "label": "Price", "role": "price"},
]


def form(schema: list[dict], side: str, data: dict | None) -> PostingForm:
    market = Market(subject="test.market", title="Test", schema=schema, tick=Decimal("0.01"))
    bound = None
    if data is not None:
        bound = QueryDict(mutable=True)
        bound.update(data)
    return PostingForm(market=market, schema=schema_parse(schema), side=side, data=bound)


# -- the generated form ---------------------------------------------------------------


def test_offer_price_tiers_become_a_disjunction_of_conjunctions():
    f = form(
        FREIGHT_SCHEMA[:1] + FREIGHT_SCHEMA[-2:],
        "offer",
        {
            "grade__eq": "HB",
            "price_mode": "reserve",
            "tiers": "3",
            "tier-0-qmin": "1000",
            "tier-0-qmax": "10000",
            "tier-0-price": "1.00",
            "tier-2-qmin": "5000",
            "tier-2-qmax": "10000",
            "tier-2-price": "0.90",
        },
    )
    assert f.form_text() == (
        "(grade = 'HB' AND pallets BETWEEN 1000 AND 10000 AND price >= 1.00) OR "
        "(grade = 'HB' AND pallets BETWEEN 5000 AND 10000 AND price >= 0.90)"
    )


def test_a_bid_bounds_the_price_and_ranges_each_attribute():
    f = form(
        FREIGHT_SCHEMA,
        "bid",
        {
            "pallets__min": "12",
            "pallets__max": "12",
            "delivery__max": "2026-12-08",
            "pickup__mode": "at",
            "pickup__x": "12.5",
            "pickup__y": "30",
            "area__mode": "within",
            "area__x1": "0",
            "area__y1": "0",
            "area__x2": "40",
            "area__y2": "40",
            "starts__min": "2027-01-01T09:30",
            "grade__eq": "it's",
            "price": "520",
        },
    )
    assert f.form_text() == (
        "pallets = 12 AND delivery <= DATE '2026-12-08' AND pickup = POINT(12.5, 30) AND "
        "area WITHIN BOX(0, 0, 40, 40) AND starts >= TIMESTAMP '2027-01-01T09:30:00Z' AND "
        "grade = 'it''s' AND price <= 520"
    )


def test_malformed_inputs_are_marked_and_build_nothing():
    f = form(
        FREIGHT_SCHEMA,
        "bid",
        {"pallets__min": "1.5", "pickup__mode": "within", "pickup__x1": "0", "price": "x"},
    )
    assert f.form_text() is None
    errors = {i.name: i.error for i in f.inputs if i.error}
    assert errors == {
        "pallets__min": "Enter a whole number such as 42.",
        "pickup__y1": "Enter this coordinate.",
        "price": "Enter a number such as 1.00 or 42.",
    }


def test_the_inputs_take_exactly_the_literals_the_language_takes():
    # Given inputs at and past the language's bounds (matching/values.py)
    f = form(
        FREIGHT_SCHEMA,
        "bid",
        {
            "pallets__min": "1000000000000000000",  # 19 digits: inside int8
            "pallets__max": "9223372036854775808",  # one past int8
            "delivery__min": "2026-02-30",  # no such day
            "starts__max": "2026-12-01T24:00",  # no such time
            "grade__eq": "H\x00B",
            "area__mode": "overlaps",
            "area__x1": "1e400",
            "area__y1": "0",
            "area__x2": "1",
            "area__y2": "1",
            "price": "1." + "0" * 40,  # 41 significant digits
        },
    )
    offer = form(FREIGHT_SCHEMA, "offer", {"closes_at": "2026-02-30T09:30"})

    # When the forms build their text and read the closing time
    text, closes_at = f.form_text(), offer.closes_at_value()

    # Then each input says what the language says of it, and nothing is built
    assert (text, closes_at) == (None, None)
    assert offer.closes_at_input.error == "Enter a date and time such as 2026-12-01T09:30."
    assert {i.name: i.error for i in f.inputs if i.error} == {
        "pallets__max": "9223372036854775808 is out of range for the int attribute pallets: "
        "ints go from -9223372036854775808 to 9223372036854775807.",
        "delivery__min": "Enter a date such as 2026-12-01.",
        "starts__max": "Enter a date and time such as 2026-12-01T09:30.",
        "grade__eq": "A string cannot contain the NUL character.",
        "area__x1": "The coordinate 1e400 is too large for a float (the largest is about 1.8e308).",
        "price": "1.0000000000000000000000000000... (42 characters) has too many digits: a "
        "number may have at most 40 significant digits.",
    }


def test_an_offer_written_by_the_form_keeps_the_digits_typed():
    f = form(
        FREIGHT_SCHEMA,
        "bid",
        {
            "pallets__min": "1000000000000000000",
            "starts__min": "2027-01-01T09:30:15",
            "area__mode": "contains",
            "area__x1": "0",
            "area__y1": "-0.5",
            "area__x2": "2e1",
            "area__y2": "30",
            "price": "1.10",
        },
    )
    offer = form(FREIGHT_SCHEMA, "offer", {"closes_at": "2026-12-01T09:30"})
    assert f.form_text() == (
        "pallets >= 1000000000000000000 AND area CONTAINS BOX(0, -0.5, 2e1, 30) AND "
        "starts >= TIMESTAMP '2027-01-01T09:30:15Z' AND price <= 1.10"
    )
    assert offer.closes_at_value() == dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC)


def test_an_empty_form_asks_for_input_and_the_advanced_box_wins():
    assert form(FREIGHT_SCHEMA, "bid", {}).form_text() is None
    advanced = form(FREIGHT_SCHEMA, "bid", {"price": "1", "constraint": "price <= 2"})
    assert advanced.source() == "price <= 2"


def test_add_tier_shows_one_more_row():
    f = form(FREIGHT_SCHEMA[:1] + FREIGHT_SCHEMA[-1:], "offer", {"tiers": "2", "add_tier": "1"})
    assert [t.index for t in f.tiers] == [0, 1, 2]


# -- presentation -----------------------------------------------------------------------


def test_error_marks_cover_the_word_at_the_position():
    text = "lot BETWEEN 1000 AND\nprice = 1"
    assert mark_at(text, 21) == 'lot BETWEEN 1000 AND\n<mark class="err">price</mark> = 1'
    assert mark_at("a < ", 4) == 'a &lt; <mark class="err"> </mark>'
    assert mark_at("<b>", None) == "&lt;b&gt;"
    assert line_col(text, 21) == "line 2, column 1"


def test_constraints_read_as_tiers():
    schema = schema_parse(
        [
            {
                "name": "lot",
                "type": "int",
                "label": "Lot size",
                "unit": "pencils",
                "role": "quantity",
            },
            {"name": "price", "type": "decimal", "label": "Price", "unit": "EUR", "role": "price"},
        ]
    )
    parsed = ui.constraint_parsed(
        text="(lot BETWEEN 1000 AND 10000 AND price = 1.00) OR (lot >= 5000 AND price > 0.9)",
        schema=schema,
    )
    assert readable(parsed, schema=schema, tick=Decimal("0.01")).lines == [
        "Lot size 1,000 – 10,000 pencils · Price 1.00 EUR",
        "Lot size ≥ 5,000 pencils · Price > 0.90 EUR",
    ]


# -- pages ------------------------------------------------------------------------------


@pytest.fixture
def pencils(db):
    return pencils_market()


def test_the_check_endpoint_answers_in_the_api_error_shape(client, pencils):
    url = reverse("frontend:market-check", args=[pencils.subject])
    ok = client.post(
        url, {"side": "bid", "constraint": "lot < 50 AND price < 1.10"}, "application/json"
    )
    assert ok.status_code == 200
    assert ok.json() == {
        "constraint": "lot <= 49 AND price <= 1.09",
        "tiers": ["Lot size ≤ 49 pencils · Price ≤ 1.09 EUR"],
    }
    bad = client.post(url, {"side": "offer", "constraint": "lot = 1 AND"}, "application/json")
    assert bad.status_code == 400
    assert bad.json()["error"]["position"] == 11
    assert client.post(url, {"side": "x"}, "application/json").status_code == 400
    assert client.post(url, "[1]", "application/json").status_code == 400
    missing = reverse("frontend:market-check", args=["no.such.market"])
    assert client.post(missing, {}, "application/json").status_code == 404


def test_posting_needs_a_login_and_calls_the_services(client, pencils):
    url = reverse("frontend:market-post", args=[pencils.subject])
    data = {"side": "offer", "tiers": "1", "tier-0-qmin": "1", "tier-0-qmax": "100"}
    data["tier-0-price"] = "1.00"
    assert client.post(url, data).status_code == 302 and Offer.objects.count() == 0

    seller = UserFactory()
    client.force_login(seller)
    response = client.post(url, data)
    offer = Offer.objects.get()
    assert response.status_code == 302 and response.url == f"/offers/{offer.pk}/"
    assert (offer.seller, offer.constraint_text) == (
        seller,
        "lot BETWEEN 1 AND 100 AND price = 1.00",
    )

    refused = client.post(url, {"side": "bid", "constraint": "lot = 5"})
    assert refused.status_code == 400
    assert "Every bid in this market must constrain price" in refused.content.decode()
    assert Bid.objects.count() == 0


def test_account_shows_only_ones_own_bids(client, pencils):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    bid_place(buyer=alice, market=pencils, constraint="lot = 7 AND price <= 1.01")
    bid_place(buyer=bob, market=pencils, constraint="lot = 9 AND price <= 1.02")
    client.force_login(bob)
    page = client.get("/account/").content.decode()
    assert "≤ 1.02" in page and "≤ 1.01" not in page


def test_market_and_offer_pages_keep_a_query_budget(client, pencils, django_assert_max_num_queries):
    seller = UserFactory()
    for lot in range(1, 21):
        offer_publish(seller=seller, market=pencils, constraint=f"lot = {lot} AND price >= 1.00")
    buyer = UserFactory()
    for lot in range(1, 11):
        bid_place(buyer=buyer, market=pencils, constraint=f"lot = {lot} AND price <= 2")
    offer = Offer.objects.first()
    client.force_login(buyer)
    with django_assert_max_num_queries(9):
        assert client.get(f"/markets/{pencils.subject}/").status_code == 200
    with django_assert_max_num_queries(8):
        assert client.get(f"/offers/{offer.pk}/").status_code == 200
    # 15: two of them the alerts' (the subscriptions the header follows, issue 39, and the
    # account's alert notifications), two the spending limit's (the bids' outcomes, and the
    # limit with what the active bids commit)
    with django_assert_max_num_queries(15):
        assert client.get("/account/").status_code == 200
    assert client.get("/offers/99999999999999999999/").status_code == 404
    assert client.get("/markets/no.such/").status_code == 404


def test_api_token_is_created_regenerated_and_revoked(client, db):
    user = UserFactory()
    client.force_login(user)
    first = client.post("/account/token/")
    key = Token.objects.get(user=user).key
    assert key in first.content.decode()
    client.post("/account/token/")
    assert Token.objects.get(user=user).key != key
    client.post("/account/token/revoke/")
    assert not Token.objects.filter(user=user).exists()
    assert client.get("/account/token/").status_code == 405


def test_withdrawing_someone_elses_offer_changes_nothing(client, pencils):
    offer = offer_publish(seller=UserFactory(), market=pencils, constraint="lot = 1 AND price = 1")
    client.force_login(UserFactory())
    response = client.post(f"/offers/{offer.pk}/withdraw/", follow=True)
    assert "Only the one who placed it can change it." in response.content.decode()
    offer.refresh_from_db()
    assert offer.state == "open"


def test_ui_pages_carry_a_content_security_policy_with_a_fresh_nonce(client, pencils):
    first = client.get(f"/markets/{pencils.subject}/")
    second = client.get(f"/markets/{pencils.subject}/")
    policy = first["Content-Security-Policy"]
    nonce = first.wsgi_request.csp_nonce
    assert policy == (
        "default-src 'self'; script-src 'self' 'nonce-" + nonce + "'; style-src 'self'; "
        "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
        "form-action 'self'; frame-ancestors 'none'"
    )
    assert f'<script type="importmap" nonce="{nonce}">' in first.content.decode()
    assert second.wsgi_request.csp_nonce != nonce
    html = first.content.decode() + client.get("/account/").content.decode()
    assert "onsubmit=" not in html and 'style="' not in html
    # The admin's and the API's own pages keep their inline code, so they carry no policy.
    assert "Content-Security-Policy" not in client.get("/api/v1/docs/")
    assert "Content-Security-Policy" not in client.get("/admin/login/")
