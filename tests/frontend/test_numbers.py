"""One way to write a number (issue 16): ``exchange.numbers``, and every place that shows a
trade's quantity (its notification, the API, the account page) going through it. What
arrives live was written by it on the server (the ``me`` frames' sentences), so the pages'
script groups no number of its own.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from exchange.models import Notification, SpendingLimit, Trade
from exchange.notification_texts import note_text
from exchange.numbers import (
    grouped_text,
    money_text,
    number_text,
    price_quantum,
    price_text,
    tick_text,
)
from exchange.selectors.limits import Award, AwardPreview, Room
from exchange.selectors.markets import market_schema
from exchange.services.closing import offer_close
from exchange.services.markets import market_create
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from frontend.views.award import award_text
from tests.api.conftest import client_for
from tests.factories import StaffFactory, UserFactory, pencils_market

# (input, what grouped_text gives); inputs are what JSON can carry.
GROUPED = [
    ("8000", "8,000"),
    ("2.5", "2.5"),
    ("9440.00", "9,440.00"),
    ("0.01", "0.01"),
    ("0", "0"),
    ("999", "999"),
    ("1000", "1,000"),
    ("1234567.891", "1,234,567.891"),
    ("-12345.60", "-12,345.60"),
    ("-100", "-100"),
    ("0012345", "0,012,345"),  # leading zeros are kept and grouped, not dropped
    (5000, "5,000"),  # an int quantity's JSON form
    (-1234567, "-1,234,567"),
    (None, "—"),
    ("", "—"),
    ("—", "—"),
    ("any", "any"),
    ("1e3", "1e3"),  # not a plain number: shown as it is
    ("1.2.3", "1.2.3"),
    ("12345.", "12345."),
    (".5", ".5"),
    ("+12345", "+12345"),
    ("12 345", "12 345"),
    ("12345\n", "12345\n"),
    ("١٢٣٤٥", "١٢٣٤٥"),  # digits other than ASCII are not this module's numbers
]


@pytest.mark.parametrize(("value", "expected"), GROUPED)
def test_grouped_text(value, expected):
    assert grouped_text(value) == expected


@pytest.mark.parametrize(
    ("value", "plain", "grouped"),
    [
        (Decimal("8000.0000000000"), "8000", "8,000"),  # as a DecimalField(10 places) reads
        (Decimal("8E+3"), "8000", "8,000"),  # as normalize() leaves it
        (Decimal("2.5000000000"), "2.5", "2.5"),
        (Decimal("12345.6700"), "12345.67", "12,345.67"),
        (Decimal("0.0100"), "0.01", "0.01"),
        (Decimal("0E-10"), "0", "0"),
        (25, "25", "25"),
        (10**12, "1000000000000", "1,000,000,000,000"),
    ],
)
def test_a_number_is_written_plain_then_grouped(value, plain, grouped):
    assert number_text(value) == plain
    assert grouped_text(value) == grouped == grouped_text(plain)


def test_none_is_no_number():
    assert number_text(None) is None
    assert price_text(None, Decimal("0.01")) is None


@pytest.mark.parametrize(
    ("value", "tick", "expected"),
    [
        (Decimal("1.1"), "0.01", "1.10"),
        (Decimal("1.2000000000"), "0.05", "1.20"),
        (Decimal("1.15"), "0.05", "1.15"),
        (Decimal("25.0000000000"), "25", "25"),
        (Decimal("1E+2"), "10", "100"),
        (Decimal("3"), "0.5", "3.0"),
        (7, "0.0001", "7.0000"),
    ],
)
def test_prices_have_their_markets_places(value, tick, expected):
    assert price_text(value, Decimal(tick)) == expected


@pytest.mark.parametrize(
    ("tick", "quantum", "text"),
    [("0.01", "0.01", "0.01"), ("0.05", "0.01", "0.05"), ("25", "1", "25"), ("1E+1", "1", "10")],
)
def test_ticks(tick, quantum, text):
    assert price_quantum(Decimal(tick)) == Decimal(quantum)
    assert tick_text(Decimal(tick)) == text


SUGAR_SCHEMA = [
    {"name": "tonnes", "type": "decimal", "unit": "t", "role": "quantity"},
    {"name": "price", "type": "decimal", "unit": "EUR", "role": "price"},
]


@pytest.mark.django_db
def test_a_decimal_quantity_reads_the_same_everywhere(client):
    """A trade of 12,345.5 t: stored with ten places, written ``12345.5`` in its
    notification and the API, ``12,345.5`` on the pages (not ``12345.5000000000``)."""
    market = market_create(
        subject="food.sugar", title="Sugar", schema=SUGAR_SCHEMA, tick="0.01", pricing="first"
    )
    seller, buyer = UserFactory(username="seller"), UserFactory(username="buyer")
    offer = offer_publish(
        seller=seller, market=market, constraint="tonnes <= 12345.5 AND price >= 1.00"
    )
    bid_place(buyer=buyer, market=market, constraint="tonnes >= 10 AND price <= 1.20")
    matching_cycle_run()

    offer_close(offer_id=offer.pk, staff=StaffFactory())

    trade = Trade.objects.get(offer=offer)
    assert trade.quantity == Decimal("12345.5") and str(trade.quantity) == "12345.5000000000"
    note = Notification.objects.get(type="trade", recipient=buyer)
    assert (note.data["price"], note.data["quantity"], note.data["total"]) == (
        "1.20",
        "12345.5",
        "14814.60",
    )
    assert note_text("trade", note.data)[0] == (
        f"Won: bid #{trade.bid_id} won the auction of offer #{offer.pk}, "
        "12,345.5 t at 1.20 EUR, 14,814.60 EUR in all."
    )
    api = client_for(buyer).get("/api/v1/trades/").json()["results"]
    assert [(t["price"], t["quantity"]) for t in api] == [("1.20", "12345.5")]
    client.force_login(buyer)
    page = client.get("/account/").content.decode()
    assert "12,345.5 t" in page and "12345.5000000000" not in page


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("33100", "33100.00"),
        (Decimal("33100.0000000000"), "33100.00"),  # a limit as stored
        (Decimal("3E+3"), "3000.00"),
        ("2.5", "2.50"),
        ("1.10", "1.10"),
        ("1.234", "1.234"),  # a market priced in thousandths keeps its places
        (0, "0.00"),
        ("-12.5", "-12.50"),
    ],
)
def test_money_has_two_places_at_least(value, expected):
    assert money_text(value) == expected


@pytest.mark.django_db
def test_money_reads_one_way_on_every_page_that_shows_it(client):
    """Amounts of money (a limit, what bids commit, an exposure, a trade's total) read with
    two places at least on every page, also in a market priced in whole units, where a
    price reads ``30``: the account page's limit line said ``33,100`` beside its exposure
    table's ``33,100.00``."""
    market = pencils_market(tick="1")
    seller, buyer = UserFactory(username="seller"), UserFactory(username="buyer")
    SpendingLimit.objects.create(user=buyer, amount=Decimal("33100"))
    offer = offer_publish(seller=seller, market=market, constraint="lot <= 100 AND price >= 25")
    bid_place(buyer=buyer, market=market, constraint="lot = 100 AND price <= 30")
    matching_cycle_run()
    client.force_login(buyer)
    page = client.get("/account/").content.decode()
    assert '<span class="num" data-limit>33,100.00</span>' in page
    assert '<span class="num" data-committed>3,000.00</span>' in page
    assert '<span class="num" data-remaining>30,100.00</span>' in page
    assert "<span data-exposure-total>3,000.00</span> EUR" in page
    client.force_login(seller)  # the depth of matching bids is the seller's to see
    page = client.get(f"/offers/{offer.pk}/").content.decode()
    assert '<td class="num">3,000.00</td>' in page  # the depth table's total
    client.force_login(buyer)
    # What the bid form says a bid could cost
    preview = AwardPreview(
        award=Award(amount=Decimal("3000"), lot=Decimal("100"), price=Decimal("30")),
        room=Room(limit=Decimal("33100"), committed=Decimal("3000")),
    )
    assert award_text(preview, market, market_schema(market=market)) == (
        "It could win at most 100 pencils at 30 EUR: 3,000.00 EUR in all. "
        "30,100.00 EUR is left of your spending limit."
    )
    # The trade, in the account's trade table, the offer page and the notification
    offer_close(offer_id=offer.pk, staff=StaffFactory())
    page = client.get("/account/").content.decode()
    assert "3,000.00 EUR" in page and ">3,000 EUR<" not in page
    note = Notification.objects.get(type="trade", recipient=buyer)
    assert note_text("trade", note.data)[0].endswith("100 pencils at 30 EUR, 3,000.00 EUR in all.")
    page = client.get(f"/offers/{offer.pk}/").content.decode()
    assert "3,000.00 EUR" in page
    # The admin's list of spending limits
    client.force_login(StaffFactory(is_superuser=True))
    page = client.get("/admin/exchange/spendinglimit/").content.decode()
    assert '<td class="field-amount_shown">33,100.00</td>' in page
    assert '<td class="field-committed">0.00</td>' in page  # the bid won: nothing active
