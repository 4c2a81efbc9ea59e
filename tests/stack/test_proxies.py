"""One truth about proxies, through the real uvicorn started as ``ops/run`` starts it (issue
37): with no trusted proxy (the default) a client's ``X-Forwarded-For`` and
``X-Forwarded-Proto`` change nothing, not even from loopback (uvicorn's own default trusts
127.0.0.1); with 127.0.0.1 as the one trusted proxy, the forwarded address is the client's
identity and the forwarded scheme the WebSocket's (``wss``: its ``https`` origin passes).

The identity is observed through a throttle bucket no other test touches: failed token
requests for an account name of this test's own, 3 a minute per (account, client), every
other rate out of the way in the server it starts; and the cap on anonymous WebSocket
connections per client address (2 here), from addresses of the test's own."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import uuid
from collections.abc import Iterator

import httpx
import pytest
import websockets
from django.db import connection

from exchange.settings.proxies import NAME
from tests.conftest import ARTIFACTS
from tests.livestack import LiveStack

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]

LOOPBACK = "127.0.0.1"


@pytest.fixture
def server(request) -> Iterator[LiveStack]:
    """uvicorn alone (no workers) with ``DJANGO_TRUSTED_PROXIES`` set to the parameter, or
    unset for ``None``."""
    stack = LiveStack(database_name=connection.settings_dict["NAME"], log_dir=ARTIFACTS / "logs")
    stack.env.pop(NAME, None)
    if request.param is not None:
        stack.env[NAME] = request.param
    stack.env["THROTTLE_LOGIN_ACCOUNT"] = "3/min"
    stack.env["WS_MAX_CONNECTIONS_PER_USER"] = "2"
    for rate in ("THROTTLE_ANON", "THROTTLE_AUTH", "THROTTLE_LOGIN_CLIENT"):
        stack.env[rate] = "100000/min"
    try:
        stack.start_server()
        yield stack
    finally:
        stack.stop()


def _failed_logins(
    stack: LiveStack, account: str, forwarded_for: list[str], source: str = LOOPBACK
) -> list[int]:
    """The statuses of failed token requests as ``account`` from ``source``, each with the
    ``X-Forwarded-For`` given: 400 while the (account, client) bucket has room, then 429."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(base_url=stack.url, transport=transport, timeout=10) as client:
        return [
            client.post(
                "/api/v1/auth/token/",
                json={"username": account, "password": "wrong"},
                headers={"X-Forwarded-For": address},
            ).status_code
            for address in forwarded_for
        ]


def _account() -> str:
    return f"proxies-{uuid.uuid4().hex[:12]}"


def _wss_origin_accepted(stack: LiveStack) -> bool:
    """Whether a handshake from loopback that says it came through TLS (``X-Forwarded-Proto:
    https``, origin ``https://`` + the host it asks for) is let through."""

    async def handshake() -> bool:
        try:
            async with websockets.connect(
                stack.ws_url,
                origin=websockets.Origin(f"https://127.0.0.1:{stack.port}"),
                additional_headers={"X-Forwarded-Proto": "https"},
                open_timeout=10,
            ):
                return True
        except websockets.InvalidStatus as refused:
            assert refused.response.status_code == 403
            return False

    return asyncio.run(handshake())


@pytest.mark.parametrize("server", [None], indirect=True)
def test_without_a_trusted_proxy_forwarded_headers_from_loopback_change_nothing(server):
    # Four failures, each claiming another address: one client, refused at the fourth
    account = _account()
    spoofed = ["10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"]
    assert _failed_logins(server, account, spoofed) == [400, 400, 400, 429]
    # and its claimed https is not believed: the https origin is not the site's (ws://)
    assert _wss_origin_accepted(server) is False


@pytest.mark.parametrize("server", [LOOPBACK], indirect=True)
def test_behind_one_trusted_proxy_the_forwarded_client_and_scheme_count(server):
    # Failures the proxy forwards for four clients: four buckets, none refused
    account = _account()
    clients = ["10.2.0.1", "10.2.0.2", "10.2.0.3", "10.2.0.4"]
    assert _failed_logins(server, account, clients) == [400] * 4
    # one forwarded client is refused at its own fourth, the rightmost address counting
    assert _failed_logins(server, account, ["10.2.0.1", "10.2.0.1"]) == [400, 400]
    assert _failed_logins(server, account, ["9.9.9.9, 10.2.0.1"]) == [429]
    # A client that reaches the server past the proxy is itself, whatever it claims
    other = _random_loopback()
    assert _failed_logins(server, account, clients, source=other) == [400, 400, 400, 429]
    # and the proxy's https makes the WebSocket wss, so the site's https origin passes
    assert _wss_origin_accepted(server) is True


def _random_loopback() -> str:
    return f"127.{random.randrange(1, 255)}.{random.randrange(256)}.{random.randrange(1, 255)}"


def _sockets(stack: LiveStack, clients: list[tuple[str, str]]) -> list[str]:
    """Open an anonymous socket per (source address, X-Forwarded-For), all kept open; per
    socket ``open`` or the code of the error it was told before its close (4013)."""

    async def scenario() -> list[str]:
        opened, outcomes = [], []
        for source, forwarded_for in clients:
            ws = await websockets.connect(
                stack.ws_url,
                additional_headers={"X-Forwarded-For": forwarded_for},
                local_addr=(source, 0),
                open_timeout=10,
            )
            opened.append(ws)
            # a refused one may be closed already: its error frame is read below
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.send('{"action": "subscribe", "stream": "system"}')
            answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if answer["type"] == "error":
                await asyncio.wait_for(ws.wait_closed(), 10)
                outcomes.append(f"{answer['code']} {ws.close_code}")
            else:
                outcomes.append("open")
        for ws in opened:
            await ws.close()
        return outcomes

    return asyncio.run(scenario())


@pytest.mark.parametrize("server", [None], indirect=True)
def test_anonymous_sockets_are_capped_per_peer_address_without_a_proxy(server):
    a, b = _random_loopback(), _random_loopback()
    spoofed = [(a, "10.3.0.1"), (a, "10.3.0.2"), (a, "10.3.0.3"), (b, "10.3.0.3")]
    assert _sockets(server, spoofed) == ["open", "open", "too_many_connections 4013", "open"]


@pytest.mark.parametrize("server", [LOOPBACK], indirect=True)
def test_anonymous_sockets_are_capped_per_forwarded_client_behind_a_trusted_proxy(server):
    forwarded = [(LOOPBACK, "10.4.0.1")] * 3 + [(LOOPBACK, "10.4.0.2")]
    assert _sockets(server, forwarded) == ["open", "open", "too_many_connections 4013", "open"]
