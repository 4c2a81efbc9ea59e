"""The "alert me when ..." shortcuts (``frontend.shortcuts``; SPEC 8.4, issue 23, issue 21
item 4): the query texts they build, the forms on the market and offer pages, where they
send the user (the Alerts and feeds page, pre-filled, nothing saved) and what a bad value
gets. Every generated text is parsed by the language's own parser here and registered
through the subscription API in ``test_shortcuts_api.py``."""

from __future__ import annotations

import re
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils.html import escape
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange.models import Offer, Subscription
from exchange.services.closing import offer_close
from exchange.services.markets import market_create
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from frontend.shortcuts import (
    BestBidMoveForm,
    JumpAlertForm,
    PriceAlertForm,
    best_bid_move_query,
    cheapest_lot_query,
    jump_query,
    pattern_trades_query,
    price_query,
)
from matching.subscriptions import AtomicQuery, PatternQuery, WatchQuery, parse_query, to_text
from tests.factories import PENCILS_SCHEMA, UserFactory, pencils_market

PENCILS = "office.supplies.pencils"

# -- the texts ------------------------------------------------------------------------------

TEXTS = [
    (
        price_query(subject=PENCILS, above=True, price=Decimal("1.10")),
        "SELECT price, quantity WHERE type = 'trade', subject = 'office.supplies.pencils', "
        "price > 1.10",
        AtomicQuery,
    ),
    (
        price_query(subject=PENCILS, above=False, price=Decimal("0")),
        "SELECT price, quantity WHERE type = 'trade', subject = 'office.supplies.pencils', "
        "price < 0",
        AtomicQuery,
    ),
    (
        jump_query(subject=PENCILS, rise=True, percent=Decimal("5"), within="1h"),
        "SELECT a.price, b.price, DUR FROM FILTER{type = 'trade' AND subject = "
        "'office.supplies.pencils'}(EVENTS) AS a NEXT{b.price > 1.05 * a.price} "
        "FILTER{type = 'trade' AND subject = 'office.supplies.pencils'}(EVENTS) AS b WITHIN 1h",
        PatternQuery,
    ),
    (
        jump_query(subject=PENCILS, rise=False, percent=Decimal("2.5"), within="10m"),
        "SELECT a.price, b.price, DUR FROM FILTER{type = 'trade' AND subject = "
        "'office.supplies.pencils'}(EVENTS) AS a NEXT{b.price < 0.975 * a.price} "
        "FILTER{type = 'trade' AND subject = 'office.supplies.pencils'}(EVENTS) AS b WITHIN 10m",
        PatternQuery,
    ),
    (
        cheapest_lot_query(subject=PENCILS, low=Decimal("2000"), high=Decimal("5000")),
        "SELECT MIN(ask) FROM offers WHERE subject = 'office.supplies.pencils' "
        "AND quantity_max BETWEEN 2000 AND 5000",
        WatchQuery,
    ),
    (
        best_bid_move_query(offer=14, by=Decimal("3"), percent=True),
        "SELECT best_value FROM offers WHERE offer = 14 NOTIFY WHEN CHANGED BY 3%",
        WatchQuery,
    ),
    (
        best_bid_move_query(offer=14, by=Decimal("0.05"), percent=False),
        "SELECT best_value FROM offers WHERE offer = 14 NOTIFY WHEN CHANGED BY 0.05",
        WatchQuery,
    ),
    (
        pattern_trades_query(pattern="*.tools.>"),
        "SELECT subject, price, quantity WHERE type = 'trade', subject MATCHES '*.tools.>'",
        AtomicQuery,
    ),
    (
        # an exponent typed by a person is written out in digits, which the language reads
        price_query(subject=PENCILS, above=True, price=Decimal("1E+3")),
        "SELECT price, quantity WHERE type = 'trade', subject = 'office.supplies.pencils', "
        "price > 1000",
        AtomicQuery,
    ),
]


@pytest.mark.parametrize(("built", "text", "kind"), TEXTS)
def test_each_shortcut_builds_an_exact_text_that_the_language_parses(built, text, kind):
    assert built == text
    parsed = parse_query(text)
    assert isinstance(parsed, kind)
    assert parse_query(to_text(parsed)) == parsed


def test_a_subject_goes_in_as_a_string_literal_whatever_its_characters():
    # Subjects are [a-z0-9.] today; the literal is still quoted as the language requires,
    # so a quote (were one ever allowed) could not end the string early.
    text = price_query(subject="it's.a.subject", above=True, price=Decimal("1"))
    assert "subject = 'it''s.a.subject'" in text
    parsed = parse_query(text)
    assert isinstance(parsed, AtomicQuery)
    assert "it''s.a.subject" in to_text(parsed)


# -- the pages ------------------------------------------------------------------------------


def _alerts_target(response) -> dict[str, list[str]]:
    """The query string of a redirect to the Alerts and feeds page."""
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert target.path == "/alerts/"
    return parse_qs(target.query, strict_parsing=True)


@pytest.fixture
def market(db):
    return pencils_market()


@pytest.mark.django_db
def test_the_market_page_offers_the_three_shortcuts_with_the_last_trade_as_the_price(
    client, market
):
    # Given a trade at 1.20
    seller, buyer = UserFactory(), UserFactory()
    offer = offer_publish(seller=seller, market=market, constraint="lot = 100 AND price >= 1.00")
    bid_place(buyer=buyer, market=market, constraint="lot = 100 AND price <= 1.20")
    matching_cycle_run()
    offer_close(offer_id=offer.pk, staff=None)

    html = client.get(f"/markets/{PENCILS}/").content.decode()

    action = f'action="/markets/{PENCILS}/alert/"'
    assert html.count(action) == 3
    for kind in ("price", "jump", "lot"):
        assert f'<input type="hidden" name="shortcut" value="{kind}">' in html
    assert 'id="shortcut-price-price" name="price"' in html
    assert 'value="1.20"' in html.split('id="shortcut-price-price"')[1].split(">")[0]
    assert '<label for="shortcut-price-price">Price (EUR)</label>' in html
    assert "Whose largest lot is between these (pencils)." in html


@pytest.mark.django_db
def test_a_market_without_a_quantity_has_no_lot_shortcut(client):
    schema = [a for a in PENCILS_SCHEMA if a["role"] != "quantity"]
    market_create(subject="art.prints", title="Prints", schema=schema)
    html = client.get("/markets/art.prints/").content.decode()
    assert html.count('action="/markets/art.prints/alert/"') == 2
    assert 'value="lot"' not in html
    # and asked anyway, it says why
    response = client.get(
        "/markets/art.prints/alert/", {"shortcut": "lot", "low": "1", "high": "2"}
    )
    assert response.status_code == 400
    assert "This market has no quantity attribute" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "query", "name"),
    [
        (
            {"shortcut": "price", "direction": "above", "price": "1.10"},
            "SELECT price, quantity WHERE type = 'trade', subject = 'office.supplies.pencils', "
            "price > 1.10",
            "Pencils: a trade above 1.10",
        ),
        (
            {"shortcut": "price", "direction": "below", "price": "0.9"},
            "SELECT price, quantity WHERE type = 'trade', subject = 'office.supplies.pencils', "
            "price < 0.9",
            "Pencils: a trade below 0.9",
        ),
        (
            {"shortcut": "jump", "direction": "rise", "percent": "5", "within": "1d"},
            "SELECT a.price, b.price, DUR FROM FILTER{type = 'trade' AND subject = "
            "'office.supplies.pencils'}(EVENTS) AS a NEXT{b.price > 1.05 * a.price} "
            "FILTER{type = 'trade' AND subject = 'office.supplies.pencils'}(EVENTS) AS b "
            "WITHIN 1d",
            "Pencils: a rise of more than 5% within 1d",
        ),
        (
            {"shortcut": "lot", "low": "2000", "high": "5000"},
            "SELECT MIN(ask) FROM offers WHERE subject = 'office.supplies.pencils' "
            "AND quantity_max BETWEEN 2000 AND 5000",
            "Pencils: cheapest offer for a lot of 2000 to 5000",
        ),
    ],
)
def test_a_market_shortcut_goes_to_the_alerts_page_filled_in_and_saves_nothing(
    client, market, params, query, name
):
    response = client.get(f"/markets/{PENCILS}/alert/", params)
    assert _alerts_target(response) == {"query": [query], "name": [name]}
    assert Subscription.objects.count() == 0


BAD_MARKET_VALUES = [
    ({"shortcut": "price", "direction": "above", "price": "abc"}, "price", "Enter a number."),
    ({"shortcut": "price", "direction": "above", "price": ""}, "price", "This field is required."),
    (
        {"shortcut": "price", "direction": "above", "price": "-1"},
        "price",
        "Ensure this value is greater than or equal to 0.",
    ),
    (
        {"shortcut": "price", "direction": "sideways", "price": "1"},
        "direction",
        "Select a valid choice. sideways is not one of the available choices.",
    ),
    (
        {"shortcut": "price", "direction": "above", "price": "1." + "1" * 11},
        "price",
        "Ensure that there are no more than 10 decimal places.",
    ),
    (
        {"shortcut": "jump", "direction": "rise", "percent": "0", "within": "1h"},
        "percent",
        "Give a percentage above 0.",
    ),
    (
        {"shortcut": "jump", "direction": "fall", "percent": "100", "within": "1h"},
        "percent",
        "A price cannot fall by 100% or more: give less than 100.",
    ),
    (
        {"shortcut": "jump", "direction": "rise", "percent": "1001", "within": "1h"},
        "percent",
        "Ensure this value is less than or equal to 1000.",
    ),
    (
        {"shortcut": "jump", "direction": "rise", "percent": "5", "within": "2h"},
        "within",
        "Select a valid choice. 2h is not one of the available choices.",
    ),
    (
        {"shortcut": "lot", "low": "5000", "high": "2000"},
        "high",
        "The largest lot must be at least the smallest (5000).",
    ),
    (
        {"shortcut": "lot", "low": "2.5", "high": "3000"},
        "low",
        "Lots are whole numbers of pencils here: give one.",
    ),
    ({"shortcut": "lot", "low": "NaN", "high": "3000"}, "low", "Enter a number."),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("params", "field", "message"), BAD_MARKET_VALUES)
def test_a_bad_value_is_shown_beside_its_field_with_what_was_typed_and_nothing_is_saved(
    client, market, params, field, message
):
    response = client.get(f"/markets/{PENCILS}/alert/", params)

    assert response.status_code == 400
    html = response.content.decode()
    kind = params["shortcut"]
    assert f'<p class="field-error" id="shortcut-{kind}-{field}-err">{escape(message)}</p>' in html
    assert f'aria-invalid="true" aria-describedby="shortcut-{kind}-{field}-err"' in html
    # the form comes back with the values typed
    for name, value in params.items():
        if name not in ("shortcut", "direction", "within"):
            assert f'name="{name}"' in html and f'value="{escape(value)}"' in html
    assert f'href="/markets/{PENCILS}/">Back to Pencils</a>' in html
    assert Subscription.objects.count() == 0


@pytest.mark.django_db
def test_unknown_shortcuts_markets_and_offers_are_404s(client, market):
    assert client.get(f"/markets/{PENCILS}/alert/", {"shortcut": "moon"}).status_code == 404
    assert client.get(f"/markets/{PENCILS}/alert/").status_code == 404
    assert client.get("/markets/no.such/alert/", {"shortcut": "price"}).status_code == 404
    assert client.get("/offers/999/alert/", {"by": "3", "unit": "percent"}).status_code == 404
    assert client.get("/offers/x1/alert/", {"by": "3", "unit": "percent"}).status_code == 404


# -- the offer page -------------------------------------------------------------------------


@pytest.fixture
def offer(market) -> Offer:
    return offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 100 AND price >= 1.00"
    )


@pytest.mark.django_db
def test_an_open_offer_page_offers_the_best_bid_watch(client, offer):
    html = client.get(f"/offers/{offer.pk}/").content.decode()
    assert f'action="/offers/{offer.pk}/alert/"' in html
    assert '<option value="price">EUR (a price difference)</option>' in html


@pytest.mark.django_db
def test_a_closed_offer_page_has_no_watch(client, offer):
    offer_close(offer_id=offer.pk, staff=None)
    html = client.get(f"/offers/{offer.pk}/").content.decode()
    assert f'action="/offers/{offer.pk}/alert/"' not in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "threshold", "said"),
    [
        ({"by": "3", "unit": "percent"}, "3%", "3%"),
        ({"by": "0.05", "unit": "price"}, "0.05", "0.05"),
    ],
)
def test_the_best_bid_watch_goes_to_the_alerts_page_filled_in(
    client, offer, params, threshold, said
):
    response = client.get(f"/offers/{offer.pk}/alert/", params)
    assert _alerts_target(response) == {
        "query": [
            f"SELECT best_value FROM offers WHERE offer = {offer.pk} "
            f"NOTIFY WHEN CHANGED BY {threshold}"
        ],
        "name": [f"Offer #{offer.pk}: best bid moves by more than {said}"],
    }
    assert Subscription.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"by": "0", "unit": "percent"}, "Give an amount above 0."),
        ({"by": "-2", "unit": "price"}, "Ensure this value is greater than or equal to 0."),
        ({"by": "1500", "unit": "percent"}, "Give a percentage of at most 1000."),
        ({"by": "lots", "unit": "price"}, "Enter a number."),
    ],
)
def test_a_bad_best_bid_threshold_is_explained_and_nothing_is_saved(client, offer, params, message):
    response = client.get(f"/offers/{offer.pk}/alert/", params)
    assert response.status_code == 400
    html = response.content.decode()
    assert f'<p class="field-error" id="shortcut-move-by-err">{escape(message)}</p>' in html
    assert f'value="{params["by"]}"' in html
    assert f'href="/offers/{offer.pk}/">Back to offer #{offer.pk}</a>' in html
    assert Subscription.objects.count() == 0


# -- the forms' choices and the pages' options agree ----------------------------------------


def _options(html: str, select_id: str) -> list[str]:
    select = html.split(f'<select id="{select_id}"')[1].split("</select>")[0]
    return re.findall(r'<option value="([^"]*)"', select)


@pytest.mark.django_db
def test_every_select_offers_exactly_its_form_s_choices(client, offer):
    market_page = client.get(f"/markets/{PENCILS}/").content.decode()
    offer_page = client.get(f"/offers/{offer.pk}/").content.decode()
    for html, select_id, form, field in [
        (market_page, "shortcut-price-direction", PriceAlertForm, "direction"),
        (market_page, "shortcut-jump-direction", JumpAlertForm, "direction"),
        (market_page, "shortcut-jump-within", JumpAlertForm, "within"),
        (offer_page, "shortcut-move-unit", BestBidMoveForm, "unit"),
    ]:
        choices = [value for value, _ in form.base_fields[field].choices]
        assert _options(html, select_id) == choices, select_id


# -- whatever is typed: a filled-in alert that parses, or a 400 with a message ---------------

# NUL is left out: the site refuses any address holding one before a view runs (a 400 of
# its own, tested with the other request checks). So are lone surrogates (category Cs): no
# browser can put one in an address (it is not UTF-8), and the test client cannot either.
TYPED = st.one_of(
    st.text(
        st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=30
    ),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["", "0", "-0", "1e999999", "00.50", "1_000", " 5 ", "5%", "٣"]),
)


@pytest.mark.django_db
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["price", "jump", "lot", "move"]),
    first=TYPED,
    second=TYPED,
    choice=st.sampled_from(["above", "below", "rise", "fall", "percent", "price", "1h", "x"]),
)
def test_any_typed_values_give_a_parsed_alert_or_a_clear_400(
    client, offer, kind, first, second, choice
):
    if kind == "move":
        url, params = f"/offers/{offer.pk}/alert/", {"by": first, "unit": choice}
    else:
        url = f"/markets/{PENCILS}/alert/"
        params = {
            "price": {"shortcut": "price", "direction": choice, "price": first},
            "jump": {"shortcut": "jump", "direction": choice, "percent": first, "within": second},
            "lot": {"shortcut": "lot", "low": first, "high": second},
        }[kind]
    response = client.get(url, params)
    if response.status_code == 302:
        query = parse_qs(urlsplit(response["Location"]).query)["query"][0]
        parse_query(query)  # never a text the language refuses
    else:
        assert response.status_code == 400
        assert 'class="field-error"' in response.content.decode()
    assert Subscription.objects.count() == 0
