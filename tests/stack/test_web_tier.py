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
import re
import signal
import socket
import struct
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
import websockets
from django.db import connection

from exchange.realtime.consumers import MAX_FRAME_BYTES
from exchange.server import WS_MAX_BYTES
from exchange.settings.web_tier import SOCKET_HANDOVER_GRACE
from ops.stack import BIN
from tests.conftest import ARTIFACTS
from tests.livestack import LiveStack, free_port, staff_browser

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


@pytest.mark.parametrize("tier", [1], indirect=True)
def test_a_frame_past_the_protocols_limit_closes_the_socket_before_it_is_read_whole(
    tier: LiveStack,
) -> None:
    assert WS_MAX_BYTES >= 4 * MAX_FRAME_BYTES  # any frame of 4,096 characters reaches the consumer

    async def scenario() -> tuple[list[dict], int]:
        answers = []
        # The client compresses (permessage-deflate, as browsers do): the large frame is a
        # few dozen bytes on the wire, and the protocol must refuse it as it inflates.
        async with websockets.connect(tier.ws_url, open_timeout=60, compression="deflate") as ws:
            await ws.send("é" * MAX_FRAME_BYTES)  # twice the consumer's limit in UTF-8
            answers.append(json.loads(await ws.recv()))
            await ws.send(json.dumps({"action": "subscribe", "stream": "market:office.>"}))
            answers.append(json.loads(await ws.recv()))
            await ws.send("x" * (WS_MAX_BYTES + 1))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
        assert closed.value.rcvd is not None
        return answers, closed.value.rcvd.code

    answers, code = asyncio.run(scenario())
    assert answers == [
        {
            "type": "error",
            "code": "too_large",
            "message": f"Frames are limited to {MAX_FRAME_BYTES} bytes.",
        },
        {"type": "subscribed", "stream": "market:office.>"},
    ]
    assert code == 1009  # "message too big"


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


# -- a response in one write (exchange/http_protocol.py) -------------------------------------

# Where ``tcpi_data_segs_in`` sits in Linux's ``struct tcp_info`` (linux/tcp.h, since 4.6).
DATA_SEGS_IN = 152
REQUESTS = [
    b"GET /api/v1/markets/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"POST /api/v1/bids/ HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    b"content-length: 2\r\n\r\n{}",
    b"GET /api/v1/no-such-thing/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"HEAD /api/v1/markets/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
]


def _segments_in(client: socket.socket) -> int:
    """The TCP segments with data that ``client`` has received."""
    info = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return int(struct.unpack_from("I", info, DATA_SEGS_IN)[0])


def _answered(port: int) -> list[tuple[bytes, int]]:
    """Each of ``REQUESTS`` on one kept connection to ``port``: its response (the date
    blanked) and the segments it came in."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
        for request in REQUESTS:
            before = _segments_in(client)
            client.sendall(request)
            response = b""
            while b"\r\n\r\n" not in response:
                response += client.recv(65536)
            head, body = response.split(b"\r\n\r\n", 1)
            length = re.search(rb"\r\ncontent-length: (\d+)", head, re.IGNORECASE)
            assert length is not None
            while not request.startswith(b"HEAD") and len(body) < int(length[1]):
                body += client.recv(65536)
            head = re.sub(rb"\r\ndate: [^\r]*", b"\r\ndate: -", head)
            out.append((head + b"\r\n\r\n" + body, _segments_in(client) - before))
    return out


@pytest.mark.parametrize("tier", [0], indirect=True)
def test_each_response_comes_whole_in_one_segment_with_the_bytes_of_uvicorns_own(
    tier: LiveStack,
) -> None:
    """The web tier, and uvicorn with its own protocol on the same application and
    database (the tier before ``exchange/http_protocol.py``): the same responses, a GET, a
    POST, a 404 and a HEAD, which uvicorn sends in two segments (headers, body) and the tier
    in one."""
    port = free_port()
    argv = [str(BIN / "python"), "-m", "uvicorn", "exchange.asgi:application", "--http"]
    argv += ["httptools", "--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    tier.spawn("uvicorn", argv + ["--log-level", "warning"])
    tier.wait_http(f"http://127.0.0.1:{port}/api/v1/markets/", "uvicorn")
    ours, theirs = _answered(tier.port), _answered(port)
    assert [response for response, _ in ours] == [response for response, _ in theirs]
    statuses = [response.split(b"\r\n", 1)[0] for response, _ in ours]
    assert statuses == [
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 401 Unauthorized",
        b"HTTP/1.1 404 Not Found",
        b"HTTP/1.1 200 OK",
    ]
    assert [segments for _, segments in ours] == [1, 1, 1, 1]
    assert [segments for _, segments in theirs] == [2, 2, 2, 1]
