"""The list reads' own query parameters (``exchange/api/views.py``): each value that is
taken, each that is refused with its exact 400, and which check comes first. A parameter
given twice counts with its last value, as Django's ``QueryDict.get`` reads it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

STATE = {
    "error": {
        "code": "invalid_state",
        "message": "state is one of open, closed, cancelled, withdrawn.",
        "field": "state",
    }
}
AFTER = {
    "error": {
        "code": "invalid_after",
        "message": "after is a whole number written with the digits 0-9.",
        "field": "after",
    }
}


def _ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


@pytest.mark.parametrize("query", ["state=bogus", "state=", "state=OPEN", "state=open&state=x"])
def test_a_state_that_is_not_one_is_refused(world, query):
    response = world["clients"]["anonymous"].get(f"/api/v1/offers/?{query}")

    assert (response.status_code, response.json()) == (400, STATE)


def test_offers_by_state_and_market(world):
    client, offer = world["clients"]["anonymous"], world["offer"]

    assert _ids(client.get("/api/v1/offers/?state=open")) == [offer.pk]
    assert _ids(client.get("/api/v1/offers/?state=x&state=closed")) == []
    assert _ids(client.get("/api/v1/offers/?market=office.>&state=open")) == [offer.pk]
    assert _ids(client.get("/api/v1/offers/?market=office.supplies.pens")) == []
    assert _ids(client.get("/api/v1/best-offers/?market=*.supplies.*")) == [offer.pk]


def test_an_unknown_parameter_is_told_before_a_bad_state(world):
    response = world["clients"]["anonymous"].get("/api/v1/offers/?state=bogus&x=1")

    assert response.json()["error"]["code"] == "unknown_parameter"


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/offers/?market=office..x",
        "/api/v1/best-offers/?market=office..x",
        "/api/v1/trades/?market=office..x",
        "/api/v1/markets/?subject=office..x",
        "/api/v1/presence/?subject=office..x",
    ],
)
def test_a_malformed_pattern_is_refused_with_its_position(world, path):
    response = world["clients"]["anonymous"].get(path)

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["position"]) == ("invalid_pattern", 7)


@pytest.mark.parametrize(
    "path, everything",
    [
        ("/api/v1/offers/?market=", "/api/v1/offers/"),
        ("/api/v1/best-offers/?market=", "/api/v1/best-offers/"),
        ("/api/v1/trades/?market=", "/api/v1/trades/"),
        ("/api/v1/markets/?subject=", "/api/v1/markets/"),
    ],
)
def test_an_empty_pattern_on_a_list_narrows_nothing(world, path, everything):
    client = world["clients"]["anonymous"]

    response = client.get(path)

    assert response.status_code == 200
    assert response.json() == client.get(everything).json()


def test_an_empty_pattern_for_presence_is_refused(world):
    response = world["clients"]["anonymous"].get("/api/v1/presence/?subject=")

    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_pattern")


def test_markets_by_subject(world):
    client = world["clients"]["anonymous"]

    rows = client.get("/api/v1/markets/?subject=office.>").json()["results"]
    assert [m["subject"] for m in rows] == [world["market"].subject]
    assert client.get("/api/v1/markets/?subject=garden.>").json()["results"] == []


@pytest.mark.parametrize("after", ["x", "-1", "", "1.0"])
def test_notifications_after_a_bad_number_are_refused(world, after):
    response = world["clients"]["buyer"].get(f"/api/v1/notifications/?after={after}")

    assert (response.status_code, response.json()) == (400, AFTER)


def test_notifications_after_a_number(world):
    client = world["clients"]["seller"]
    every = _ids(client.get("/api/v1/notifications/"))
    assert every

    assert _ids(client.get(f"/api/v1/notifications/?after={every[0]}")) == every[1:]
    assert _ids(client.get(f"/api/v1/notifications/?after=x&after={every[-1]}")) == []
