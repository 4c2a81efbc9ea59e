"""No user input makes a page answer 500 (docs/reliability.md; COMMON rule "bad user input
gets a clear 4xx and changes nothing"): every field and query parameter of the staff pages
(``exchange/views``) and of the web UI's forms (``frontend/views``) is sent each of a table
of hostile values (out of range, not a number, NUL, very long, other scripts' digits, dates
at the calendar's ends), by a signed-in user or staff, through Django's whole stack."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from unittest import mock

import pytest
from django.test import Client

from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db

HOSTILE = [
    "",
    " ",
    "0",
    "-1",
    "1.5",
    "99999999999999999999",
    "9223372036854775808",
    "1e309",
    "nan",
    "inf",
    "\x00",
    "a\x00b",
    "x" * 5000,
    "٣",
    "²",
    "0001-01-01",
    "9999-12-31",
    "2026-02-30",
    "%",
    "[]",
    "{",
    "<script>",
    "price <= AND lot",
]


@dataclass(frozen=True)
class Form:
    """A page and one of its inputs; ``{offer}``, ``{bid}`` and ``{market}`` in the path
    stand for the user's own order and the market."""

    method: str
    path: str
    field: str
    staff: bool = False
    others: tuple[tuple[str, str], ...] = ()


FORMS = [
    Form("get", "/staff/analytics/", "end", staff=True),
    Form("get", "/staff/analytics/", "days", staff=True),
    Form("get", "/staff/analytics/", "end", staff=True, others=(("days", "366"),)),
    Form("get", "/staff/", "page", staff=True),
    Form("get", "/", "q"),
    Form("get", "/markets/{market}/", "side"),
    Form("get", "/markets/{market}/", "offer", others=(("side", "bid"),)),
    Form("get", "/markets/{market}/", "tier", others=(("side", "bid"),)),
    Form("post", "/markets/{market}/post/", "constraint"),
    Form("post", "/markets/{market}/post/", "side"),
    Form("post", "/markets/{market}/post/", "price", others=(("side", "bid"),)),
    Form("post", "/markets/{market}/post/", "lot", others=(("side", "bid"),)),
    Form("post", "/markets/{market}/post/", "closes_at", others=(("side", "offer"),)),
    Form("post", "/markets/{market}/check/", "constraint"),
    Form("post", "/markets/{market}/check/", "side"),
    Form("post", "/markets/{market}/preview/", "price", others=(("side", "bid"),)),
    Form("post", "/markets/{market}/award/", "price"),
    Form("get", "/markets/{market}/alert/", "shortcut"),
    Form("get", "/offers/{offer}/alert/", "shortcut"),
    Form("post", "/offers/{offer}/edit/", "constraint", others=(("version", "1"),)),
    Form("post", "/offers/{offer}/edit/", "version", others=(("constraint", "price >= 1"),)),
    Form("post", "/bids/{bid}/edit/", "constraint", others=(("version", "1"),)),
    Form("post", "/bids/{bid}/raise/", "price", others=(("version", "1"),)),
    Form("post", "/bids/{bid}/raise/", "version", others=(("price", "1.20"),)),
    Form("post", "/offers/{offer}/withdraw/", "next"),
    Form("post", "/alerts/", "query"),
    Form("post", "/alerts/", "name", others=(("query", "SELECT * FROM a"),)),
    Form("get", "/alerts/", "query"),
    Form("get", "/alerts/", "name"),
    Form("post", "/alerts/check/", "query"),
    Form("post", "/alerts/backtest/", "range", others=(("query", "SELECT * FROM a"),)),
    Form("post", "/alerts/backtest/", "query"),
    Form("get", "/alerts/1/notes/", "after"),
    Form("get", "/alerts/1/notes/", "limit"),
    Form("post", "/alerts/1/webhook/", "url"),
    Form("post", "/register/", "username"),
    Form("post", "/login/", "username"),
    Form("post", "/login/", "next"),
]


@pytest.fixture
def book() -> Iterator[dict[str, object]]:
    with mock.patch("exchange.services.orders.matching_cycle_request"):
        market = pencils_market()
        user, staff = UserFactory(), StaffFactory()
        offer = offer_publish(seller=user, market=market, constraint="lot <= 100 AND price >= 1.00")
        bid = bid_place(buyer=user, market=market, constraint="lot = 5 AND price <= 1.10")
        yield {"market": market, "user": user, "staff": staff, "offer": offer, "bid": bid}


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"{f.method} {f.path} {f.field}")
def test_no_value_of_an_input_makes_a_page_fail(client: Client, book, form: Form) -> None:
    client.force_login(book["staff"] if form.staff else book["user"])
    path = form.path.format(
        market=book["market"].subject, offer=book["offer"].pk, bid=book["bid"].pk
    )
    failures = []
    with mock.patch("exchange.services.orders.matching_cycle_request"):
        for value in HOSTILE:
            data = {**dict(form.others), form.field: value}
            response = getattr(client, form.method)(path, data)
            if response.status_code >= 500:
                failures.append((value[:20], response.status_code))
    assert failures == []


@pytest.mark.parametrize(
    ("sent", "to"),
    [("0", None), ("home", None), ("//evil.example/", None), ("/markets/x/", "/markets/x/")],
)
def test_a_withdrawal_goes_back_to_a_path_of_this_site_only(client: Client, book, sent, to):
    # ``next=0`` was taken for a view's name by ``redirect`` and answered 500
    client.force_login(book["user"])
    response = client.post(f"/offers/{book['offer'].pk}/withdraw/", {"next": sent})
    assert response.status_code == 302
    assert response["Location"] == (to or f"/offers/{book['offer'].pk}/")


@pytest.mark.parametrize(("sent", "to"), [("0", "/"), ("/alerts/", "/alerts/")])
def test_registering_goes_on_to_a_path_of_this_site_only(sent, to):
    browser = Client(REMOTE_ADDR=f"10.0.9.{len(sent)}")
    form = {"username": f"new{len(sent)}", "password1": "a-long-pass-2026"}
    response = browser.post("/register/", {**form, "password2": form["password1"], "next": sent})
    assert (response.status_code, response["Location"]) == (302, to)


def test_raising_a_bid_to_a_price_too_large_to_divide_by_the_tick_is_refused(client: Client, book):
    # 1e309 passed every check before the tick's, whose division failed (a 500)
    client.force_login(book["user"])
    bid = book["bid"]
    response = client.post(f"/bids/{bid.pk}/raise/", {"price": "1e309", "version": "1"})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "1e309 is too large for a price." in page
    bid.refresh_from_db()
    assert (bid.version, bid.constraint_text) == (1, "lot = 5 AND price <= 1.10")


def test_the_analytics_window_stops_at_the_calendars_first_day(client: Client, book):
    # The day before 0001-01-01 does not exist: computing it was a 500
    client.force_login(book["staff"])
    response = client.get("/staff/analytics/", {"end": "0001-01-05", "days": "30"})
    assert response.status_code == 200
    assert "0001-01-01 to 0001-01-05" in response.content.decode()
