"""Throttling answers 429 in the API's error shape."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.settings import api_settings

pytestmark = pytest.mark.django_db


def test_anonymous_requests_are_throttled(client, settings, monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {**api_settings.DEFAULT_THROTTLE_RATES, "anon": "3/min"})
    cache.clear()
    statuses = [client.get("/api/v1/markets/").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    body = client.get("/api/v1/markets/").json()
    assert body["error"]["code"] == "throttled"
    assert body["error"]["retry_after"] > 0
