"""What the committed schema says about errors (issue 22): each operation lists exactly the
error statuses its view can answer, each with the one error body and its headers.
tests/api/test_conformance.py checks that the answers stay inside what is listed; this checks
that the list is the intended one."""

from __future__ import annotations

import pytest
import yaml

from tests.livestack import ROOT

SCHEMA = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
COMMON = ["400", "401", "429", "503"]  # any request: bad input, a bad token, throttled, db down


@pytest.mark.parametrize(
    ("method", "path", "statuses"),
    [
        ("get", "/api/v1/markets/", ["200", *COMMON]),
        ("get", "/api/v1/offers/{offer_id}/", ["200", *COMMON, "404"]),
        ("post", "/api/v1/auth/token/", ["200", "400", "413", "415", "429", "503"]),
        ("post", "/api/v1/markets/", ["201", *COMMON, "403", "413", "415"]),
        ("post", "/api/v1/bids/", ["201", *COMMON, "403", "413", "415", "422"]),
        (
            "patch",
            "/api/v1/offers/{offer_id}/",
            ["200", *COMMON, "403", "404", "409", "413", "415"],
        ),
        ("post", "/api/v1/offers/{offer_id}/close/", ["200", *COMMON, "403", "404"]),
    ],
)
def test_each_operation_lists_the_errors_it_can_answer(method, path, statuses):
    responses = SCHEMA["paths"][path][method]["responses"]

    assert sorted(responses) == sorted(statuses)
    for status in statuses:
        if status >= "400":
            assert responses[status] == {"$ref": f"#/components/responses/Error{status}"}


def test_every_error_has_the_one_shape_and_its_headers():
    shared = SCHEMA["components"]["responses"]
    assert sorted(shared) == [
        f"Error{s}" for s in ("400", "401", "403", "404", "409", "413", "415", "422", "429", "503")
    ]
    for response in shared.values():
        body = response["content"]["application/json"]["schema"]
        assert body == {"$ref": "#/components/schemas/Error"}
    assert {name: sorted(r.get("headers", {})) for name, r in shared.items() if "headers" in r} == {
        "Error401": ["WWW-Authenticate"],
        "Error429": ["Retry-After"],
        "Error503": ["Retry-After"],
    }
    error = SCHEMA["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    detail = SCHEMA["components"]["schemas"]["ErrorDetail"]
    assert sorted(detail["properties"]) == [
        "code",
        "field",
        "limit",  # over_limit's numbers (docs/api.md, Spending limits)
        "message",
        "position",
        "retry_after",
    ]
    assert detail["required"] == ["code", "message"]


def test_idempotent_creates_document_their_headers():
    for path in ("/api/v1/offers/", "/api/v1/bids/"):
        operation = SCHEMA["paths"][path]["post"]
        headers = [p["name"] for p in operation["parameters"] if p["in"] == "header"]
        assert headers == ["Idempotency-Key"]
        assert list(operation["responses"]["201"]["headers"]) == ["Idempotent-Replay"]


@pytest.mark.django_db
def test_a_bad_token_is_answered_as_documented(client):
    response = client.get("/api/v1/markets/", HTTP_AUTHORIZATION="Token not-a-token")

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Token"
    assert response.json() == {
        "error": {"code": "authentication_failed", "message": "Invalid token."}
    }
