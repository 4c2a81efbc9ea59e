"""The REST API's contract (SPEC 6.5): shapes, versions, idempotency and errors."""

from __future__ import annotations

import pytest

from exchange.models import Bid, IdempotencyKey, Offer
from exchange.services.matching import matching_cycle_run

pytestmark = pytest.mark.django_db


def test_token_endpoint_trades_credentials_for_a_token(world, client):
    response = client.post(
        "/api/v1/auth/token/",
        {"username": "alice", "password": "pw-for-tests-1"},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert len(response.json()["token"]) == 40
    bad = client.post(
        "/api/v1/auth/token/",
        {"username": "alice", "password": "nope"},
        content_type="application/json",
    )
    assert bad.status_code == 400
    assert bad.json() == {
        "error": {"code": "invalid_credentials", "message": "Unknown username or wrong password."}
    }


def test_market_is_self_describing(world):
    response = world["clients"]["anonymous"].get("/api/v1/markets/office.supplies.pencils/")
    body = response.json()
    assert response.status_code == 200
    assert (body["tick"], body["pricing"]) == ("0.01", "first")
    assert [a["name"] for a in body["schema"]] == ["lot", "price"]
    assert body["schema"][1]["role"] == "price"


def test_posting_an_offer_returns_the_canonical_constraint(world):
    response = world["clients"]["seller"].post(
        "/api/v1/offers/",
        {"market": "office.supplies.pencils", "constraint": "price > 0.99 AND lot IN [5, 9)"},
        format="json",
    )
    body = response.json()
    assert response.status_code == 201, body
    assert (body["version"], body["state"]) == (1, "open")
    assert body["constraint"] == "price >= 1.00 AND lot BETWEEN 5 AND 8"
    assert body["best_value"] is None and body["matching_bids"] == 0


def test_the_json_form_means_the_same_as_the_text(world):
    response = world["clients"]["seller"].post(
        "/api/v1/offers/",
        {
            "market": "office.supplies.pencils",
            "constraint": {
                "any_of": [{"lot": {"between": [1000, 10000]}, "price": {"eq": "1.00"}}]
            },
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["constraint"] == "lot BETWEEN 1000 AND 10000 AND price = 1.00"


def test_offer_detail_shows_the_live_best_value(world):
    body = world["clients"]["anonymous"].get(f"/api/v1/offers/{world['offer'].pk}/").json()
    assert (body["best_value"], body["matching_bids"]) == ("1.70", 2)


def test_validation_errors_have_a_code_a_message_and_a_position(world):
    response = world["clients"]["seller"].post(
        "/api/v1/offers/",
        {"market": "office.supplies.pencils", "constraint": "lot = 5 AND price = 1.005"},
        format="json",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["field"], error["position"]) == ("off_tick", "constraint", 12)
    assert Offer.objects.count() == 1


def test_a_stale_version_gets_409_and_changes_nothing(world):
    url = f"/api/v1/bids/{world['bid'].pk}/"
    before = Bid.objects.get(pk=world["bid"].pk).constraint_text
    response = world["clients"]["buyer"].patch(
        url, {"constraint": "price <= 9.00", "version": 5}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "stale_version"
    assert Bid.objects.get(pk=world["bid"].pk).constraint_text == before
    ok = world["clients"]["buyer"].patch(
        url, {"constraint": "lot = 10 AND price <= 2.00", "version": 1}, format="json"
    )
    assert ok.status_code == 200 and ok.json()["version"] == 2


def test_idempotency_key_replays_the_first_response(world):
    alice = world["clients"]["buyer"]
    body = {"market": "office.supplies.pencils", "constraint": "lot = 30 AND price <= 1.10"}
    first = alice.post("/api/v1/bids/", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = alice.post("/api/v1/bids/", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert Bid.objects.filter(buyer__username="alice").count() == 2
    other = alice.post(
        "/api/v1/bids/",
        {**body, "constraint": "price <= 1.20"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    assert Bid.objects.filter(buyer__username="alice").count() == 2


def test_a_failed_request_leaves_its_idempotency_key_free(world):
    alice = world["clients"]["buyer"]
    bad = alice.post(
        "/api/v1/bids/",
        {"market": "office.supplies.pencils", "constraint": "lot = 1"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k-2",
    )
    assert bad.status_code == 400
    assert not IdempotencyKey.objects.filter(key="k-2").exists()


def test_bids_list_shows_where_each_bid_matches_and_is_best(world):
    body = world["clients"]["other"].get("/api/v1/bids/").json()
    assert body["count"] == 1
    assert body["results"][0]["matches"] == [
        {
            "offer": world["offer"].pk,
            "value": "1.70",
            "best": True,
            "behind_own": False,
            "min_next": None,
        }
    ]
    mine = world["clients"]["buyer"].get("/api/v1/bids/").json()["results"][0]["matches"]
    assert mine == [
        {
            "offer": world["offer"].pk,
            "value": "1.50",
            "best": False,
            "behind_own": False,
            "min_next": "1.71",
        }
    ]


def test_close_returns_state_and_trade_and_is_idempotent(world):
    url = f"/api/v1/offers/{world['offer'].pk}/close/"
    first = world["clients"]["staff"].post(url)
    assert first.status_code == 200
    body = first.json()
    assert body["state"] == "closed"
    assert (body["trade"]["price"], body["trade"]["quantity"], body["trade"]["bid"]) == (
        "1.70",
        "20",
        world["other_bid"].pk,
    )
    assert world["clients"]["staff"].post(url).json() == body


def test_notifications_resume_after_a_sequence_number(world):
    bob = world["clients"]["other"]
    all_notes = bob.get("/api/v1/notifications/").json()["results"]
    assert [n["type"] for n in all_notes] == ["best_bid"]
    assert bob.get(f"/api/v1/notifications/?after={all_notes[-1]['seq']}").json()["results"] == []
    assert bob.get("/api/v1/notifications/?after=x").status_code == 400


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"market": 5, "constraint": "x = 1"}',
        b'{"market": "office.supplies.pencils"}',
        b'{"market": "nowhere", "constraint": "price <= 1.00"}',
        b'{"market": "office.supplies.pencils", "constraint": 7}',
        b'{"market": "office.supplies.pencils", "constraint": "price <= 1.00 AND (((("}',
    ],
)
def test_bad_bodies_get_400_with_the_error_shape(world, body):
    response = world["clients"]["buyer"].post(
        "/api/v1/bids/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert set(response.json()["error"]) >= {"code", "message"}
    assert Bid.objects.count() == 2


def test_unknown_api_paths_are_json_404(world):
    response = world["clients"]["anonymous"].get("/api/v1/nothing-here/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_matching_cycle_after_api_bid(world):
    world["clients"]["buyer"].post(
        "/api/v1/bids/",
        {"market": "office.supplies.pencils", "constraint": "lot = 40 AND price <= 1.90"},
        format="json",
    )
    matching_cycle_run()
    assert (
        world["clients"]["anonymous"]
        .get(f"/api/v1/offers/{world['offer'].pk}/")
        .json()["best_value"]
        == "1.90"
    )


def test_a_new_bid_is_answered_as_a_read_of_it_before_matching_would_show(world):
    buyer = world["clients"]["buyer"]
    created = buyer.post(
        "/api/v1/bids/",
        {"market": "office.supplies.pencils", "constraint": "lot = 40 AND price <= 1.90"},
        format="json",
    )
    assert created.status_code == 201
    body = created.json()
    assert body == buyer.get(f"/api/v1/bids/{body['id']}/").json()
    assert body["constraint"] == "lot = 40 AND price <= 1.90"
