"""Bad input at the edges gets a clear JSON error and changes nothing (SPEC 9, issue 15):
digits that are not ASCII, JSON nested deeper than the limit, bodies over the limit."""

from __future__ import annotations

import pytest
from django.test import Client

from exchange.http import json_bounded, nesting_within
from exchange.models import Bid, Notification, Offer

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("after", ["²", "٣", "1²", "-1", "+1", " 1", "9" * 20, "0x10", ""])
def test_after_takes_only_ascii_whole_numbers(world, after):
    response = world["clients"]["buyer"].get("/api/v1/notifications/", {"after": after})
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "invalid_after",
            "message": "after is a whole number written with the digits 0-9.",
            "field": "after",
        }
    }


def test_after_with_ascii_digits_still_works(world):
    response = world["clients"]["buyer"].get("/api/v1/notifications/", {"after": "0"})
    assert response.status_code == 200


def test_an_id_in_the_path_with_other_digits_is_not_found(world):
    response = world["clients"]["buyer"].get("/api/v1/offers/²/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "path", ["/api/v1/auth/token/", "/api/v1/markets/office.supplies.pencils/check/"]
)
def test_deep_json_to_anonymous_endpoints_is_refused_before_parsing(world, path):
    response = Client().post(path, DEEP, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "too_deep",
            "message": "JSON may nest arrays and objects at most 32 levels deep.",
        }
    }


def test_deep_json_to_order_endpoints_changes_nothing(world):
    before = (Offer.objects.count(), Bid.objects.count(), Notification.objects.count())
    nested = '{"market": "office.supplies.pencils", "constraint": ' + DEEP + "}"
    for path in ("/api/v1/offers/", "/api/v1/bids/"):
        response = world["clients"]["buyer"].post(path, nested, content_type="application/json")
        assert (response.status_code, response.json()["error"]["code"]) == (400, "too_deep")
    assert (Offer.objects.count(), Bid.objects.count(), Notification.objects.count()) == before


def test_an_oversize_json_body_gets_a_json_413(world, settings):
    body = '{"username": "' + "a" * (settings.JSON_MAX_BYTES) + '", "password": "x"}'
    response = Client().post("/api/v1/auth/token/", body, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": {"code": "too_large", "message": "The body is limited to 262144 bytes."}
    }


def test_a_body_that_is_not_utf8_or_not_json_gets_a_400(world):
    for body, code in ((b"\xff\xfe{", "bad_json"), (b"{'a': 1}", "bad_json")):
        response = Client().post("/api/v1/auth/token/", body, content_type="application/json")
        assert (response.status_code, response.json()["error"]["code"]) == (400, code)


def test_the_api_reads_json_only(world):
    response = world["clients"]["buyer"].post(
        "/api/v1/bids/", {"market": "office.supplies.pencils", "constraint": "price <= 1"}
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert Bid.objects.count() == 2


def test_the_ui_check_refuses_deep_and_oversize_bodies_with_json(world, settings):
    url = "/markets/office.supplies.pencils/check/"
    deep = Client().post(url, DEEP, content_type="application/json")
    assert (deep.status_code, deep.json()["error"]["code"]) == (400, "too_deep")
    big = Client().post(url, " " * (settings.JSON_MAX_BYTES + 1), content_type="application/json")
    assert (big.status_code, big.json()["error"]["code"]) == (413, "too_large")


def test_a_body_over_djangos_upload_limit_gets_json_on_json_endpoints(world, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    # With a CSRF cookie and no header, the CSRF middleware reads the token from request.POST,
    # where Django enforces its limit.
    client = Client(enforce_csrf_checks=True)
    client.cookies["csrftoken"] = "a" * 32
    response = client.post(
        "/markets/office.supplies.pencils/check/",
        "side=bid&constraint=" + "x" * 200,
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 413
    assert response.json() == {
        "error": {"code": "too_large", "message": "The request body is too large."}
    }


def test_a_csrf_failure_on_a_json_endpoint_is_json(world):
    response = Client(enforce_csrf_checks=True).post(
        "/markets/office.supplies.pencils/check/", "{}", content_type="application/json"
    )
    assert response.status_code == 403
    assert response.json() == {
        "error": {
            "code": "csrf_failed",
            "message": "CSRF check failed (CSRF cookie not set.); reload the page.",
        }
    }


def test_a_tier_count_with_other_digits_is_not_a_500(world):
    client = Client()
    client.force_login(world["users"]["seller"])
    response = client.get("/markets/office.supplies.pencils/post/", {"side": "offer"})
    assert response.status_code == 200
    response = client.post(
        "/markets/office.supplies.pencils/post/", {"side": "offer", "tiers": "²", "add_tier": "1"}
    )
    assert response.status_code == 200


def test_the_nesting_scan_ignores_brackets_inside_strings():
    assert nesting_within('["[[[[", "\\"[[[", {"a": [1]}]', 3)
    assert not nesting_within('[[[["]"]]]]', 3)
    assert nesting_within("[" * 32 + "]" * 32, 32)
    assert not nesting_within("[" * 33, 32)
    assert json_bounded('{"a": ["[[[[[[["]}', max_depth=2) == {"a": ["[[[[[[["]}
