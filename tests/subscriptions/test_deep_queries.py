"""Issue 37's probe on every endpoint that parses a query: 237 levels of parentheses (498
characters) are a 400 ``too_deep`` at the 101st parenthesis, with the parser's message,
and nothing is stored; the same query nested at the limit (100) is accepted. Before the
parsers counted depth, each of these answered Django's debug page for a RecursionError.
``manage.py subscription_run``'s exit 2 is in tests/exchange/test_subscription_run.py."""

from __future__ import annotations

import pytest

from exchange.models import Subscription
from tests.api.conftest import (
    client_for,
    rates,  # noqa: F401 - the fixture that sets rates
)
from tests.factories import UserFactory
from tests.matching.subscriptions.test_query_depth import DEEP, DEEP_MESSAGE

pytestmark = pytest.mark.django_db

POSITION = len("SELECT * WHERE ") + 100
AT_THE_LIMIT = "SELECT price WHERE " + "(" * 100 + "price > 1" + ")" * 100
ERROR = {"code": "too_deep", "message": DEEP_MESSAGE, "position": POSITION, "field": "query"}


@pytest.fixture
def alice():
    return UserFactory(username="alice")


def test_registering_is_a_400_too_deep_and_stores_nothing(alice):
    response = client_for(alice).post(
        "/api/v1/subscriptions/", {"query": DEEP, "name": "deep"}, format="json"
    )

    assert response.status_code == 400
    assert response.json() == {"error": ERROR}
    assert Subscription.objects.count() == 0
    at_limit = client_for(alice).post(
        "/api/v1/subscriptions/", {"query": AT_THE_LIMIT}, format="json"
    )
    assert at_limit.status_code == 201, at_limit.json()


def test_a_backtest_is_a_400_too_deep(alice):
    body = {"query": DEEP, "since": "2026-11-20T09:00:00Z"}
    response = client_for(alice).post("/api/v1/subscriptions/test/", body, format="json")

    assert response.status_code == 400
    assert response.json() == {"error": ERROR}
    assert Subscription.objects.count() == 0


def test_the_alerts_check_is_a_400_too_deep(client, alice):
    client.force_login(alice)
    response = client.post("/alerts/check/", {"query": DEEP}, content_type="application/json")

    assert response.status_code == 400
    assert response.json() == {"error": ERROR}


def test_saving_an_alert_is_a_400_page_with_the_error_and_saves_nothing(client, alice):
    client.force_login(alice)
    response = client.post("/alerts/", {"query": DEEP, "name": "deep"})

    assert response.status_code == 400
    html = response.content.decode()
    assert f'data-error-code="too_deep" data-error-position="{POSITION}"' in html
    assert DEEP_MESSAGE in html
    assert Subscription.objects.count() == 0


def test_the_alerts_backtest_says_too_deep_in_its_fragment_and_as_a_400_page(client, alice):
    client.force_login(alice)
    fragment = client.post(
        "/alerts/backtest/", {"query": DEEP, "range": "hour"}, HTTP_HX_REQUEST="true"
    )
    whole = client.post("/alerts/backtest/", {"query": DEEP, "range": "hour"})

    assert fragment.status_code == 200  # htmx swaps it in
    assert 'data-backtest-error="too_deep"' in fragment.content.decode()
    assert whole.status_code == 400
    assert 'data-backtest-error="too_deep"' in whole.content.decode()
    assert Subscription.objects.count() == 0
