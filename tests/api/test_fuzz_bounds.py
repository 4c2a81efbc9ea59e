"""Adversarial input on every operation of the committed OpenAPI schema, and on the UI's JSON
endpoint: nesting far past the limit, bodies past the size limit, ids and numbers written
with digits other than ASCII's. Each gets a clear JSON 4xx and changes nothing."""

from __future__ import annotations

import re

import pytest
import yaml
from django.conf import settings as django_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange.models import Bid, Market, Notification, Offer
from exchange.services.subscriptions import subscription_create
from tests.livestack import ROOT

pytestmark = pytest.mark.django_db

SCHEMA = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
WITH_BODY = [
    (path, method)
    for path, item in SCHEMA["paths"].items()
    for method, operation in item.items()
    if method in ("post", "patch", "put")
    # JSON bodies; the feed import reads CSV or JSON lines (its limits: tests/adapters).
    and "application/json" in operation.get("requestBody", {}).get("content", {})
]
OTHER_DIGITS = st.text(
    st.characters(categories=["Nd", "No"], exclude_characters="0123456789"), min_size=1, max_size=4
)


def concrete(path: str, world) -> str:
    """The schema's path with its parameters filled from the world's rows (a subscription
    of staff's, whose client sends the bodies, made the first time a path needs one)."""
    path = path.replace("{subject}", world["market"].subject)
    path = path.replace("{offer_id}", str(world["offer"].pk))
    if "{subscription_id}" in path:
        if "subscription" not in world:
            world["subscription"] = subscription_create(
                owner=world["users"]["staff"], query="SELECT * WHERE type = 'trade'"
            )
        path = path.replace("{subscription_id}", str(world["subscription"].pk))
    return path.replace("{bid_id}", str(world["bid"].pk))


def snapshot():
    return (
        Market.objects.count(),
        list(Offer.objects.order_by("pk").values_list("version", "state")),
        list(Bid.objects.order_by("pk").values_list("version", "state")),
        Notification.objects.count(),
    )


def assert_json_error(response, status: int, code: str) -> None:
    assert response["Content-Type"] == "application/json", response.content[:200]
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)


@pytest.mark.parametrize(("path", "method"), WITH_BODY)
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(depth=st.integers(min_value=33, max_value=40_000), opener=st.sampled_from(["[", "{"]))
def test_deep_bodies_get_a_400_on_every_operation(world, path, method, depth, opener):
    before = snapshot()
    closer = "]" if opener == "[" else "}"
    body = (opener if opener == "[" else '{"a":') * depth + closer * depth
    client = world["clients"]["staff"]
    response = getattr(client, method)(concrete(path, world), body, content_type="application/json")
    assert_json_error(response, 400, "too_deep")
    assert snapshot() == before


@pytest.mark.parametrize(("path", "method"), WITH_BODY)
def test_oversize_bodies_get_a_413_on_every_operation(world, path, method):
    before = snapshot()
    body = '{"constraint": "' + "x" * django_settings.JSON_MAX_BYTES + '"}'
    client = world["clients"]["staff"]
    response = getattr(client, method)(concrete(path, world), body, content_type="application/json")
    assert_json_error(response, 413, "too_large")
    assert snapshot() == before


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(digits=OTHER_DIGITS)
def test_ids_and_numbers_in_other_digits_are_refused(world, digits):
    client = world["clients"]["buyer"]
    after = client.get("/api/v1/notifications/", {"after": digits})
    assert_json_error(after, 400, "invalid_after")
    for template in ("/api/v1/offers/{}/", "/api/v1/bids/{}/"):
        assert_json_error(client.get(template.format(digits)), 404, "not_found")
    ui = client.get(f"/offers/{digits}/")
    assert ui.status_code == 404


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
# Up to 100,000 levels: 200,000 bytes, under JSON_MAX_BYTES (a longer body is a 413 first).
@given(depth=st.integers(min_value=33, max_value=100_000))
def test_the_ui_check_refuses_deep_bodies(world, depth):
    response = world["clients"]["anonymous"].post(
        f"/markets/{world['market'].subject}/check/",
        "[" * depth + "]" * depth,
        content_type="application/json",
    )
    assert_json_error(response, 400, "too_deep")


def test_every_operation_with_a_body_is_covered():
    names = {re.sub(r"\{[a-z_]+\}", "*", path) for path, _ in WITH_BODY}
    assert {"/api/v1/auth/token/", "/api/v1/offers/", "/api/v1/bids/", "/api/v1/markets/"} <= names
