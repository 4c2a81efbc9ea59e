"""The web tier as ``ops/run`` starts it (``exchange/server.py``, issue 36): on one address, an
HTTP request is served by an HTTP process and a WebSocket by a socket process, which alone
holds the connection (so its frames never wait behind a request thread); a socket process
killed is started again and takes the next connection; with ``SOCKET_WORKERS=0`` the HTTP
process carries the socket itself, as before; while no socket process is alive ``/healthz``
says so, and once nobody has restarted one within the hand-over grace the HTTP process
serves new WebSockets itself instead of queueing them.

Which process holds a connection is read from the kernel: the inode of the server's end of
the TCP connection (``/proc/net/tcp``) among each process's open descriptors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
import websockets
from django.db import connection

from exchange.settings.web_tier import SOCKET_HANDOVER_GRACE
from tests.conftest import ARTIFACTS
from tests.livestack import LiveStack, staff_browser

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tier(request) -> Iterator[LiveStack]:
    """The web tier alone (no Celery workers) with one HTTP process and ``request.param``
    socket processes."""
    stack = LiveStack(database_name=connection.settings_dict["NAME"], log_dir=ARTIFACTS / "logs")
    # A short hand-over grace, so that a test sees the HTTP process take over (30 s by default)
    stack.env[SOCKET_HANDOVER_GRACE] = "2"
    try:
        stack.start_server(workers=1, socket_workers=request.param, ready_path="/api/v1/markets/")
        yield stack
    finally:
        stack.stop()


def _server_end_inode(server_port: int, client_port: int) -> int:
    """The inode of the server's end of the loopback connection from ``client_port``."""
    local = f"0100007F:{server_port:04X}"
    remote = f"0100007F:{client_port:04X}"
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                return int(fields[9])
    raise AssertionError(f"no connection {remote} -> {local} in /proc/net/tcp")


def _holders(stack: LiveStack, server_port: int, client_port: int) -> dict[str, list[int]]:
    """Which processes of the tier hold the server's end of the connection, by role."""
    target = f"socket:[{_server_end_inode(server_port, client_port)}]"
    server = stack.processes["server"]
    out: dict[str, list[int]] = {}
    roles = {"supervisor": [server.pid], "web": server.children("web")}
    roles["socket"] = server.children("socket")
    for role, pids in roles.items():
        for pid in pids:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                        out.setdefault(role, []).append(pid)
                except FileNotFoundError:
                    continue
    return out


async def _subscribed(url: str, then: Callable[[int], object]) -> None:
    """A WebSocket to ``url``, subscribed to a market pattern; ``then(client_port)`` runs
    while it is open."""
    async with websockets.connect(url, open_timeout=60) as ws:
        await ws.send(json.dumps({"action": "subscribe", "stream": "market:office.>"}))
        assert json.loads(await ws.recv()) == {"type": "subscribed", "stream": "market:office.>"}
        then(ws.local_address[1])


def _http_keepalive(stack: LiveStack) -> socket.socket:
    """A connection that has had one request answered and stays open (keep-alive)."""
    client = socket.create_connection(("127.0.0.1", stack.port), timeout=30)
    client.sendall(b"GET /api/v1/markets/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += client.recv(4096)
    assert head.startswith(b"HTTP/1.1 200 ")
    return client


@pytest.mark.parametrize("tier", [1], indirect=True)
def test_http_goes_to_the_http_process_and_a_websocket_to_the_socket_process(
    tier: LiveStack,
) -> None:
    (web,) = tier.processes["server"].children("web")
    (sock,) = tier.processes["server"].children("socket")
    with _http_keepalive(tier) as client:
        assert _holders(tier, tier.port, client.getsockname()[1]) == {"web": [web]}
    seen: list[dict[str, list[int]]] = []
    asyncio.run(_subscribed(tier.ws_url, lambda port: seen.append(_holders(tier, tier.port, port))))
    assert seen == [{"socket": [sock]}]


@pytest.mark.parametrize("tier", [1], indirect=True)
def test_a_socket_process_killed_is_started_again_and_takes_the_next_websocket(
    tier: LiveStack,
) -> None:
    server = tier.processes["server"]
    (killed,) = server.children("socket")
    os.kill(killed, signal.SIGKILL)
    seen: list[dict[str, list[int]]] = []
    # The connection waits in the hand-over pair until the new process takes it.
    asyncio.run(_subscribed(tier.ws_url, lambda port: seen.append(_holders(tier, tier.port, port))))
    (started,) = server.children("socket")
    assert started != killed
    assert seen == [{"socket": [started]}]
    assert server.alive()


@pytest.mark.parametrize("tier", [0], indirect=True)
def test_with_no_socket_process_the_http_process_carries_the_websocket(tier: LiveStack) -> None:
    (web,) = tier.processes["server"].children("web")
    assert tier.processes["server"].children("socket") == []
    seen: list[dict[str, list[int]]] = []
    asyncio.run(_subscribed(tier.ws_url, lambda port: seen.append(_holders(tier, tier.port, port))))
    assert seen == [{"web": [web]}]


def _staff_browser(stack: LiveStack) -> httpx.Client:
    """A client logged in as staff (``/healthz`` shows its components to staff only)."""
    return staff_browser(stack.url, "tier-staff")


def _socket_workers_until(browser: httpx.Client, done: Callable[[dict], bool]) -> tuple[int, dict]:
    """``/healthz``'s status and ``socket_workers`` once ``done`` holds for the latter."""
    for _ in range(600):
        response = browser.get("/healthz")
        status = response.json()["components"]["socket_workers"]
        if done(status):
            return response.status_code, status
        time.sleep(0.1)
    raise AssertionError(f"/healthz never said so: {status}")


@pytest.mark.parametrize("tier", [1], indirect=True)
def test_while_no_socket_process_is_alive_health_is_down_and_the_http_process_serves_websockets(
    tier: LiveStack,
) -> None:
    server = tier.processes["server"]
    (web,) = server.children("web")
    (killed,) = server.children("socket")
    with contextlib.closing(_staff_browser(tier)) as browser:
        _, status = _socket_workers_until(browser, lambda s: s["ok"])
        assert status == {"ok": True, "alive": ["socket0"], "down": [], "upgrades": "handed_over"}
        # The supervisor stopped (so that nobody restarts it), the socket process killed
        os.kill(server.pid, signal.SIGSTOP)
        try:
            os.kill(killed, signal.SIGKILL)
            code, status = _socket_workers_until(browser, lambda s: not s["ok"])
            assert code == 503
            assert (status["alive"], status["down"]) == ([], ["socket0"])
            # Past the grace since its last beat, new WebSockets are served by the HTTP
            # process rather than queued for a socket process that may never come
            code, status = _socket_workers_until(browser, lambda s: s["upgrades"] == "served_here")
            assert code == 503
            assert status == {
                "ok": False,
                "alive": [],
                "down": ["socket0"],
                "upgrades": "served_here",
            }
            seen: list[dict[str, list[int]]] = []
            asyncio.run(
                _subscribed(tier.ws_url, lambda port: seen.append(_holders(tier, tier.port, port)))
            )
            assert seen == [{"web": [web]}]
        finally:
            os.kill(server.pid, signal.SIGCONT)
        # The supervisor goes on: the socket process is started again, health is up, and the
        # next WebSocket is handed to it
        code, status = _socket_workers_until(browser, lambda s: s["ok"])
        assert status == {"ok": True, "alive": ["socket0"], "down": [], "upgrades": "handed_over"}
    (started,) = server.children("socket")
    assert started != killed
    seen = []
    asyncio.run(_subscribed(tier.ws_url, lambda port: seen.append(_holders(tier, tier.port, port))))
    assert seen == [{"socket": [started]}]
