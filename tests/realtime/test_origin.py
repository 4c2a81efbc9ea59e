"""The WebSocket origin check compares scheme, host and port with the site's own origin."""

from __future__ import annotations

import asyncio

import pytest

from exchange.asgi import application
from exchange.realtime.origin import origin_allowed
from tests.realtime.client import PATIENCE, Socket

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("origin", "host", "secure", "allowed"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000", False, True),
        ("http://localhost", "localhost", False, True),
        ("http://localhost:80", "localhost", False, True),
        ("https://localhost", "localhost", True, True),
        ("http://127.0.0.1:8001", "127.0.0.1:8000", False, False),  # another port
        ("https://127.0.0.1:8000", "127.0.0.1:8000", False, False),  # another scheme
        ("http://localhost:8000", "127.0.0.1:8000", False, False),  # another host
        ("http://evil.example", "evil.example", False, False),  # not an allowed host
        ("null", "127.0.0.1:8000", False, False),
        ("http://127.0.0.1:99999", "127.0.0.1:99999", False, False),  # malformed port
    ],
)
def test_origins_are_compared_by_scheme_host_and_port(origin, host, secure, allowed):
    assert origin_allowed(origin=origin, host=host, secure=secure) is allowed


def test_trusted_origins_are_allowed_too(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.org"]
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    assert origin_allowed(origin="https://app.example.org", host="127.0.0.1:8000", secure=False)
    assert not origin_allowed(
        origin="https://app.example.org:8443", host="127.0.0.1:8000", secure=False
    )


def test_wildcard_trusted_origins_match_as_djangos_csrf_check_matches_them(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.example.org", "http://*.test.example:8080"]
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    for origin, allowed in [
        ("https://app.example.org", True),
        ("https://a.b.example.org", True),
        ("https://example.org", True),  # Django's is_same_domain includes the domain itself
        ("http://app.example.org", False),  # another scheme
        ("https://app.example.org:8443", False),  # another port
        ("https://evilexample.org", False),
        ("https://example.org.evil.com", False),
        ("http://a.test.example:8080", True),
        ("http://a.test.example", False),
    ]:
        assert origin_allowed(origin=origin, host="127.0.0.1:8000", secure=False) is allowed, origin


def test_a_handshake_from_another_port_is_refused_and_one_without_origin_accepted():
    async def connect(headers) -> bool:
        ws = Socket(application, "/ws/", headers=headers)
        connected, _ = await ws.connect(timeout=PATIENCE)
        await ws.disconnect()
        return connected

    host = (b"host", b"127.0.0.1:8000")
    assert asyncio.run(connect([host, (b"origin", b"http://127.0.0.1:8000")])) is True
    assert asyncio.run(connect([host, (b"origin", b"http://127.0.0.1:9000")])) is False
    assert asyncio.run(connect([host])) is True
