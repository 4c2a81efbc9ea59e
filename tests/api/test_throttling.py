"""Throttles answer a clear 429, key on an identity the client cannot choose, and hold per
account and per client on every way to log in (SPEC 9 security, issue 15)."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.settings import api_settings

from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-1"


@pytest.fixture(autouse=True)
def fresh_counters(settings):
    """Counters of this test only: a key prefix of its own in the shared Redis cache."""
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "KEY_PREFIX": f"test-{uuid.uuid4().hex}"}
    }


def test_anonymous_requests_are_throttled(client, rates):
    rates(anon="3/min")
    statuses = [client.get("/api/v1/markets/").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    body = client.get("/api/v1/markets/").json()
    assert body["error"]["code"] == "throttled"
    assert body["error"]["retry_after"] > 0


def test_a_forwarded_for_header_does_not_change_who_the_client_is(client, rates):
    assert api_settings.NUM_PROXIES == 0
    rates(anon="3/min")
    statuses = [
        client.get("/api/v1/markets/", HTTP_X_FORWARDED_FOR=f"10.0.0.{i}").status_code
        for i in range(4)
    ]
    assert statuses == [200, 200, 200, 429]


def _login(path: str, username: str, address: str, password: str = "wrong") -> Client:
    browser = Client(REMOTE_ADDR=address)
    browser.response = browser.post(path, {"username": username, "password": password})
    return browser


def _logged_in_as(browser: Client) -> str | None:
    return browser.session.get("_auth_user_id")


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_failed_logins_from_elsewhere_never_refuse_the_accounts_own_login(path, rates):
    rates(login_account="2/min")
    user = StaffFactory(username="target")
    # An attacker fails from one address until refused, and once more from each of others.
    attacker = [_login(path, "Target ", "10.0.1.1").response.status_code for _ in range(3)]
    assert attacker == [200, 200, 429]
    assert [_login(path, "target", f"10.0.1.{i}").response.status_code for i in (2, 3)] == [
        200,
        200,
    ]
    # The owner, from their own address, gets in at once.
    owner = _login(path, "target", "10.0.1.9", password=PASSWORD)
    assert owner.response.status_code == 302
    assert _logged_in_as(owner) == str(user.pk)


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_failed_logins_refuse_that_account_from_that_client_only(path, rates):
    rates(login_account="2/min")
    user = StaffFactory(username="target")
    other = StaffFactory(username="other")
    assert [_login(path, "target", "10.0.8.1").response.status_code for _ in range(2)] == [
        200,
        200,
    ]
    # The right password from the same address is refused now, and logs nobody in.
    locked = _login(path, " TARGET", "10.0.8.1", password=PASSWORD)
    assert locked.response.status_code == 429
    assert int(locked.response["Retry-After"]) > 0
    assert "Too many attempts" in locked.response.content.decode()
    assert _logged_in_as(locked) is None
    # Another account from that address, and the same account from another, still get in.
    elsewhere = _login(path, "target", "10.0.8.2", password=PASSWORD)
    assert elsewhere.response.status_code == 302
    assert _logged_in_as(elsewhere) == str(user.pk)
    same_address = _login(path, "other", "10.0.8.1", password=PASSWORD)
    assert same_address.response.status_code == 302
    assert _logged_in_as(same_address) == str(other.pk)


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_successful_logins_are_not_counted_as_failures(path, rates):
    rates(login_account="1/min")
    user = StaffFactory(username="regular")
    browsers = [_login(path, "regular", "10.0.9.1", password=PASSWORD) for _ in range(3)]
    assert [b.response.status_code for b in browsers] == [302, 302, 302]
    assert [_logged_in_as(b) for b in browsers] == [str(user.pk)] * 3


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_login_pages_are_throttled_per_client_across_accounts(path, rates):
    rates(login_client="3/min")
    statuses = [_login(path, f"user{i}", "10.0.2.1").response.status_code for i in range(4)]
    assert statuses == [200, 200, 200, 429]
    assert _login(path, "user9", "10.0.2.2").response.status_code == 200


def test_registration_is_throttled_per_client_and_creates_nobody_when_refused(rates):
    rates(login_client="1/min")
    browser = Client(REMOTE_ADDR="10.0.3.1")
    form = {"username": "newbie", "password1": "a-long-pass-2026", "password2": "a-long-pass-2026"}
    first = browser.post("/register/", {**form, "password2": "mismatch"})
    assert first.status_code == 400
    refused = browser.post("/register/", form)
    assert refused.status_code == 429
    assert not get_user_model().objects.filter(username="newbie").exists()


def _token(username: str, address: str, password: str = PASSWORD):
    return Client(REMOTE_ADDR=address).post(
        "/api/v1/auth/token/",
        {"username": username, "password": password},
        content_type="application/json",
    )


def test_token_creation_counts_failures_per_account_and_client(rates):
    rates(login_account="2/min")
    UserFactory(username="bot")
    failures = [_token("bot", "10.0.4.1", "wrong").status_code for _ in range(2)]
    refused = _token("bot", "10.0.4.1")
    assert failures == [400, 400]
    assert refused.status_code == 429
    body = refused.json()
    assert body["error"]["code"] == "throttled"
    assert body["error"]["retry_after"] > 0
    assert not Token.objects.filter(user__username="bot").exists()
    # Another client gets its token despite those failures; successes are never counted.
    assert [_token("bot", "10.0.4.2").status_code for _ in range(3)] == [200, 200, 200]


def test_token_creation_is_throttled_per_client(rates):
    rates(auth="2/min")
    statuses = [
        Client(REMOTE_ADDR="10.0.5.1")
        .post(
            "/api/v1/auth/token/",
            {"username": f"nobody{i}", "password": "x"},
            content_type="application/json",
        )
        .status_code
        for i in range(3)
    ]
    assert statuses == [400, 400, 429]


def test_the_ui_constraint_check_is_throttled_per_client(rates):
    market = pencils_market()
    rates(check="2/min")
    browser = Client(REMOTE_ADDR="10.0.6.1")
    url = f"/markets/{market.subject}/check/"
    body = {"side": "bid", "constraint": "price <= 1"}
    statuses = [browser.post(url, body, "application/json").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    refused = browser.post(url, body, "application/json")
    assert refused.json()["error"]["code"] == "throttled"
    assert int(refused["Retry-After"]) > 0


def test_throttles_let_requests_through_while_redis_is_down(settings, rates, world):
    # A cache on a port where nothing listens: every throttle's read fails at once.
    settings.CACHES = {
        "default": {
            **settings.CACHES["default"],
            "LOCATION": "redis://127.0.0.1:9/1",
            "OPTIONS": {"socket_connect_timeout": 1},
        }
    }
    rates(anon="1/min", login_account="1/min", login_client="1/min")
    statuses = [Client().get("/api/v1/markets/").status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    token = Client().post(
        "/api/v1/auth/token/",
        {"username": "alice", "password": PASSWORD},
        content_type="application/json",
    )
    assert token.status_code == 200
    assert _login("/login/", "alice", "10.0.7.1", PASSWORD).response.status_code == 302
