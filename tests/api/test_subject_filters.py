"""``?subject=`` and ``?market=`` take subject patterns (SPEC 8.2) on every list that takes a
subject: markets, offers, best offers, trades; a malformed pattern is a 400 with the code,
the message, the parameter and the position, and lists nothing."""

from __future__ import annotations

import pytest

from exchange.services.closing import offer_close
from exchange.services.orders import bid_place, offer_publish
from tests.api.conftest import client_for
from tests.factories import StaffFactory, UserFactory, pencils_market
from tests.subjects import BAD_PATTERNS

pytestmark = pytest.mark.django_db

SUBJECTS = ["office.supplies.pencils", "office.supplies.pens", "office.tools.staplers"]
SUBJECTS += ["garden.tools.spades", "office"]


@pytest.fixture
def markets():
    """Five markets, each with one offer, and a trade on each but ``office``."""
    seller, buyer, staff = UserFactory(), UserFactory(), StaffFactory()
    found = {}
    for subject in SUBJECTS:
        market = pencils_market(subject=subject)
        offer = offer_publish(
            seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
        )
        if subject != "office":
            bid_place(buyer=buyer, market=market, constraint="lot = 10 AND price <= 1.50")
            offer_publish(
                seller=seller, market=market, constraint="lot BETWEEN 1 AND 100 AND price >= 1.00"
            )
            offer_close(offer_id=offer.pk, staff=staff)
        found[subject] = market
    return found


def _subjects(response, key) -> list[str]:
    assert response.status_code == 200, response.json()
    return sorted(row[key] for row in response.json()["results"])


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("office.>", ["office.supplies.pencils", "office.supplies.pens", "office.tools.staplers"]),
        ("*.tools.*", ["garden.tools.spades", "office.tools.staplers"]),
        ("office.*.pens", ["office.supplies.pens"]),
        ("office", ["office"]),
        ("*", ["office"]),
        ("office.supplies.pen", []),
    ],
)
def test_markets_filter_by_a_pattern(markets, pattern, expected):
    response = client_for(None).get("/api/v1/markets/", {"subject": pattern})
    assert _subjects(response, "subject") == expected


def test_offers_best_offers_and_trades_filter_their_market_by_a_pattern(markets):
    client = client_for(None)
    office = ["office.supplies.pencils", "office.supplies.pens", "office.tools.staplers"]
    offers = client.get("/api/v1/offers/", {"market": "office.>"})
    best = client.get("/api/v1/best-offers/", {"market": "office.>"})
    trades = client.get("/api/v1/trades/", {"market": "*.tools.*"})
    # offers: every state (two per traded market); best offers: the open ones only
    assert _subjects(offers, "market") == sorted(office * 2)
    assert _subjects(best, "market") == office
    assert _subjects(trades, "market") == ["garden.tools.spades", "office.tools.staplers"]
    literal = client.get("/api/v1/offers/", {"market": "office", "state": "open"})
    assert _subjects(literal, "market") == ["office"]


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/v1/markets/", "subject"),
        ("/api/v1/offers/", "market"),
        ("/api/v1/best-offers/", "market"),
        ("/api/v1/trades/", "market"),
    ],
)
@pytest.mark.parametrize(("pattern", "position", "message"), BAD_PATTERNS)
def test_a_malformed_pattern_is_a_400_with_its_position(
    markets, url, parameter, pattern, position, message
):
    response = client_for(None).get(url, {parameter: pattern})
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "invalid_pattern",
            "message": f"{parameter} is not a subject pattern: {message}.",
            "field": parameter,
            "position": position,
        }
    }
