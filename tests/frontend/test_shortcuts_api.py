"""What each shortcut fills in is a query the subscription API accepts as it stands: the
text taken from the shortcut's redirect to the Alerts and feeds page is registered with
``POST /api/v1/subscriptions/`` (201), with the kind the shortcut means and the canonical
text of the language's own printer."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from exchange.models import Subscription
from exchange.services.orders import offer_publish
from matching.subscriptions import parse_query, to_text
from tests.api.conftest import client_for
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db

PENCILS = "office.supplies.pencils"


def _filled_in(client, url: str, params: dict) -> tuple[str, str]:
    response = client.get(url, params)
    assert response.status_code == 302
    target = parse_qs(urlsplit(response["Location"]).query)
    return target["query"][0], target["name"][0]


def _registered(user, query: str, name: str) -> dict:
    """The subscription API's answer to registering the text as it stands (201)."""
    response = client_for(user).post(
        "/api/v1/subscriptions/", {"query": query, "name": name}, format="json"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["query"] == to_text(parse_query(query))
    return body


@pytest.mark.parametrize(
    ("params", "kind"),
    [
        ({"shortcut": "price", "direction": "above", "price": "1.10"}, "events"),
        ({"shortcut": "price", "direction": "below", "price": "0.95"}, "events"),
        ({"shortcut": "jump", "direction": "rise", "percent": "5", "within": "1h"}, "pattern"),
        ({"shortcut": "jump", "direction": "fall", "percent": "12.5", "within": "10m"}, "pattern"),
        ({"shortcut": "lot", "low": "2000", "high": "5000"}, "state"),
    ],
)
def test_a_market_shortcut_s_query_registers_as_it_stands(client, params, kind):
    pencils_market()
    alice = UserFactory(username="alice")
    query, name = _filled_in(client, f"/markets/{PENCILS}/alert/", params)

    body = _registered(alice, query, name)

    assert (body["kind"], body["name"], body["state"]) == (kind, name, "active")
    assert Subscription.objects.get().owner == alice


@pytest.mark.parametrize(
    "params", [{"by": "3", "unit": "percent"}, {"by": "0.05", "unit": "price"}]
)
def test_the_best_bid_watch_registers_as_it_stands(client, params):
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 100 AND price >= 1.00"
    )
    alice = UserFactory(username="alice")
    query, name = _filled_in(client, f"/offers/{offer.pk}/alert/", params)

    body = _registered(alice, query, name)

    assert (body["kind"], body["name"], body["state"]) == ("state", name, "active")


def test_the_market_search_s_pattern_alert_registers_as_it_stands(client):
    pencils_market()
    html = client.get("/", {"q": "office.>"}).content.decode()
    href = html.split('<a class="pattern-alert" href="')[1].split('"')[0].replace("&amp;", "&")
    target = parse_qs(urlsplit(href).query)

    body = _registered(UserFactory(username="alice"), target["query"][0], target["name"][0])

    assert (body["kind"], body["name"], body["query"]) == (
        "events",
        "Trades on office.>",
        "SELECT subject, price, quantity WHERE type = 'trade', subject MATCHES 'office.>'",
    )
