"""Who may do what (SPEC 5.6), endpoint by endpoint and role by role, with exact statuses;
and no response ever shows a bid's constraint to anyone but its owner and staff."""

from __future__ import annotations

import itertools
import json

import pytest

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "buyer", "other", "seller", "staff"]
SUBJECTS = itertools.count()


def market_body():
    return {
        "subject": f"test.market{next(SUBJECTS)}",
        "title": "T",
        "tick": "0.01",
        "pricing": "first",
        "schema": [
            {
                "name": "price",
                "type": "decimal",
                "label": "P",
                "unit": "",
                "required_on_offer": True,
                "required_on_bid": True,
                "role": "price",
            }
        ],
    }


# (method, path template, body, expected status per role in ROLES order)
MATRIX = [
    ("get", "/api/v1/markets/", None, [200, 200, 200, 200, 200]),
    ("post", "/api/v1/markets/", market_body, [401, 403, 403, 403, 201]),
    ("get", "/api/v1/markets/office.supplies.pencils/", None, [200, 200, 200, 200, 200]),
    ("get", "/api/v1/offers/", None, [200, 200, 200, 200, 200]),
    (
        "post",
        "/api/v1/offers/",
        {"market": "office.supplies.pencils", "constraint": "lot = 1 AND price = 2.00"},
        [401, 201, 201, 201, 201],
    ),
    ("get", "/api/v1/offers/{offer}/", None, [200, 200, 200, 200, 200]),
    (
        "patch",
        "/api/v1/offers/{offer}/",
        {"constraint": "lot = 2 AND price >= 1.00", "version": 1},
        [401, 403, 403, 200, 403],
    ),
    ("post", "/api/v1/offers/{offer}/withdraw/", None, [401, 403, 403, 200, 403]),
    ("post", "/api/v1/offers/{offer}/cancel/", None, [401, 403, 403, 403, 200]),
    ("post", "/api/v1/offers/{offer}/close/", None, [401, 403, 403, 403, 200]),
    ("get", "/api/v1/bids/", None, [401, 200, 200, 200, 200]),
    (
        "post",
        "/api/v1/bids/",
        {"market": "office.supplies.pencils", "constraint": "price <= 1.00"},
        [401, 201, 201, 201, 201],
    ),
    ("get", "/api/v1/bids/{bid}/", None, [401, 200, 404, 404, 200]),
    (
        "patch",
        "/api/v1/bids/{bid}/",
        {"constraint": "price <= 1.00", "version": 1},
        [401, 200, 404, 404, 403],
    ),
    ("post", "/api/v1/bids/{bid}/withdraw/", None, [401, 200, 404, 404, 403]),
    ("get", "/api/v1/best-offers/", None, [200, 200, 200, 200, 200]),
    ("get", "/api/v1/trades/", None, [200, 200, 200, 200, 200]),
    ("get", "/api/v1/notifications/", None, [401, 200, 200, 200, 200]),
]


@pytest.mark.parametrize(
    "method, path, body, role, expected",
    [
        pytest.param(m, p, b, role, statuses[i], id=f"{m} {p} as {role}")
        for m, p, b, statuses in MATRIX
        for i, role in enumerate(ROLES)
    ],
)
def test_permission_matrix(world, method, path, body, role, expected):
    client = world["clients"][role]
    url = path.format(offer=world["offer"].pk, bid=world["bid"].pk)
    payload = body() if callable(body) else body
    response = (
        getattr(client, method)(url, payload, format="json")
        if payload is not None
        else getattr(client, method)(url)
    )
    assert response.status_code == expected, response.content
    if response.status_code >= 400:
        assert set(response.json()["error"]) >= {"code", "message"}
    # a bid's constraint reaches only its owner and staff
    text = json.dumps(response.json())
    if role not in ("buyer", "staff"):
        assert world["bid"].constraint_text not in text
    if role not in ("other", "staff"):
        assert world["other_bid"].constraint_text not in text


def test_trade_details_reach_only_the_parties(world):
    world["clients"]["staff"].post(f"/api/v1/offers/{world['offer'].pk}/close/")
    for role, party in [
        ("anonymous", False),
        ("buyer", False),
        ("other", True),
        ("seller", True),
        ("staff", True),
    ]:
        trade = world["clients"][role].get("/api/v1/trades/").json()["results"][0]
        assert trade["price"] == "1.70"
        assert (trade["buyer"] is not None) is party, role
        assert (trade["agreed_constraint"] is not None) is party, role
