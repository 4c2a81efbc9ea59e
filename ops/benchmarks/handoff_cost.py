#!/usr/bin/env python3
"""What the socket tier (``exchange/server.py``, issue 36) costs, as server CPU: per HTTP
request (a 404, the cheapest request, so any cost added shows most) on a new connection and
on a kept-alive one, and per WebSocket connection (handshake, subscribe, close), with
``SOCKET_WORKERS`` 0 (the HTTP process serves everything, as before) and 1.

    .venv/bin/python ops/benchmarks/handoff_cost.py [--count 300] [--port 18951]

It starts the web tier alone (one HTTP process, no Celery workers) on the live benchmark's
database (``ops/bench_live.py`` builds it) and reads each process's user plus system time from
``/proc/<pid>/stat`` around ``--count`` requests sent one at a time. Loopback only; prints a
Markdown table and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from websockets.sync.client import connect

from ops.benchmarks.live import provision
from ops.benchmarks.live.costs import cpu_split
from ops.stack import Stack

WARM = 20
NOT_FOUND = b"GET /api/v1/no-such-thing/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _answer(client: socket.socket) -> None:
    """Read one response (a 404 with a body of known length) off ``client``."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += client.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += client.recv(65536)


def http_new(port: int, count: int) -> None:
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(NOT_FOUND)
            _answer(client)


def http_kept(port: int, count: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as client:
        for _ in range(count):
            client.sendall(NOT_FOUND)
            _answer(client)


def websocket(port: int, count: int) -> None:
    for _ in range(count):
        with connect(f"ws://127.0.0.1:{port}/ws/") as ws:
            ws.send(json.dumps({"action": "subscribe", "stream": "market:office.>"}))
            ws.recv()


KINDS = {
    "HTTP 404, new connection each": http_new,
    "HTTP 404, one kept-alive connection": http_kept,
    "WebSocket: open, subscribe, close": websocket,
}


def cpu(pids: list[int]) -> float:
    return sum(sum(cpu_split(pid)) for pid in pids)


def measure(port: int, count: int, socket_workers: int) -> list[dict[str, Any]]:
    stack = Stack(env=provision.env(), log_dir=ROOT / ".data" / "bench-handoff")
    rows = []
    try:
        server = stack.start_server(
            port=port, workers=1, socket_workers=socket_workers, ready_path="/api/v1/markets/"
        )
        web = server.children("web")
        sockets = server.children("socket")
        for kind, send in KINDS.items():
            send(port, WARM)
            before = (cpu(web), cpu(sockets), cpu([server.pid]))
            wall = time.perf_counter()
            send(port, count)
            wall = time.perf_counter() - wall
            after = (cpu(web), cpu(sockets), cpu([server.pid]))
            rows.append(
                {
                    "socket_workers": socket_workers,
                    "kind": kind,
                    "http_ms": 1000 * (after[0] - before[0]) / count,
                    "socket_ms": 1000 * (after[1] - before[1]) / count,
                    "supervisor_ms": 1000 * (after[2] - before[2]) / count,
                    "wall_ms": 1000 * wall / count,
                }
            )
    finally:
        stack.stop()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--port", type=int, default=18951)
    args = parser.parse_args()
    load = [os.getloadavg()[0]]
    rows = measure(args.port, args.count, 0) + measure(args.port, args.count, 1)
    load.append(os.getloadavg()[0])
    print(
        "| `SOCKET_WORKERS` | what | HTTP process CPU ms | socket process CPU ms | "
        "supervisor CPU ms | wall ms |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['socket_workers']} | {r['kind']} | {r['http_ms']:.2f} | {r['socket_ms']:.2f} "
            f"| {r['supervisor_ms']:.2f} | {r['wall_ms']:.2f} |"
        )
    print(
        f"\n{args.count} each, after {WARM} untimed; load average {load[0]:.1f} before, "
        f"{load[1]:.1f} after"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
