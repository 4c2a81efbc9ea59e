"""Server CPU per request (``ops/bench_live.py --request-costs N``): each kind of request the
live load sends, N times one after another, to a single uvicorn process on the bench book,
with the CPU time that process spent on them (``/proc/<pid>/stat``: user plus system). It
is what a profile would attribute to each request, without a profiler's overhead, and the
figure that decides how many requests a second the web tier can serve on this machine.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from ops.benchmarks.live.load import SUBJECT

BEGIN = "<!-- request costs: written by ops/bench_live.py --request-costs -->"
END = "<!-- end of the request costs -->"
WARM = 20


def cpu_split(pid: int) -> tuple[float, float]:
    """The user and the system CPU time of process ``pid`` so far, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


PY_SPY = Path(__file__).resolve().parents[3] / ".venv" / "bin" / "py-spy"


@contextmanager
def _profiled(pid: int, out: Path | None, *, gil: bool = True) -> Iterator[None]:
    """py-spy recording process ``pid`` (its threads holding the GIL, or with ``gil`` false
    those the system has running, 500 samples a second, raw collapsed stacks) into ``out``
    while the block runs; nothing when ``out`` is None."""
    if out is None:
        yield
        return
    argv = [str(PY_SPY), "record", "--pid", str(pid), *(["--gil"] if gil else []), "--rate", "500"]
    argv += ["--format", "raw", "--output", str(out)]
    spy = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # py-spy attaches
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _requests(
    token: str, first_offer: int, offers: int
) -> list[tuple[str, Callable[[httpx.Client, int], httpx.Response], set[int]]]:
    auth = {"Authorization": f"Token {token}"}

    def bid(client: httpx.Client, i: int) -> httpx.Response:
        text = f"lot = {2000 + i % 50} AND price <= 0.{10 + i % 80:02d}"
        return client.post(
            "/api/v1/bids/", json={"market": SUBJECT, "constraint": text}, headers=auth
        )

    def get(path: Callable[[int], str]) -> Callable[[httpx.Client, int], httpx.Response]:
        return lambda client, i: client.get(path(i))

    return [
        ("`POST /api/v1/bids/` (a token)", bid, {201}),
        (
            "`GET /api/v1/best-offers/?limit=50`",
            get(lambda i: "/api/v1/best-offers/?limit=50"),
            {200},
        ),
        (
            "`GET /api/v1/offers/<id>/`",
            get(lambda i: f"/api/v1/offers/{first_offer + i % offers}/"),
            {200},
        ),
        ("`GET /api/v1/markets/`", get(lambda i: "/api/v1/markets/"), {200}),
        ("`GET /healthz`", get(lambda i: "/healthz"), {200}),
        ("`GET /api/v1/no-such-page/` (a 404)", get(lambda i: "/api/v1/no-such-page/"), {404}),
    ]


def measure(
    *, base_url: str, pid: int, token: str, offers: int, count: int, profile: Path | None = None
) -> list[dict[str, Any]]:
    """Each request kind ``count`` times (after a few untimed): server CPU and wall time
    per request, in milliseconds. Any answer but the expected status stops the bench.
    With ``profile`` (a folder), py-spy records the server during each kind's timed requests
    into ``<profile>/<kind>.txt`` (its CPU figures then include py-spy's pauses)."""
    rows = []
    with httpx.Client(base_url=base_url, timeout=60) as client:
        first = client.get("/api/v1/offers/?state=open&limit=1").json()["results"][0]["id"]
        for name, send, expected in _requests(token, first, offers):
            for i in range(WARM):
                send(client, i)
            out = None if profile is None else profile / f"{_slug(name)}.txt"
            with _profiled(pid, out):
                (user, system), wall = cpu_split(pid), time.perf_counter()
                for i in range(count):
                    answer = send(client, i)
                    if answer.status_code not in expected:
                        raise SystemExit(f"{name}: {answer.status_code} {answer.text[:200]}")
                after, wall = cpu_split(pid), time.perf_counter() - wall
                user, system = after[0] - user, after[1] - system
            rows.append(
                {
                    "request": name,
                    "count": count,
                    "cpu_ms": 1000 * (user + system) / count,
                    "system_ms": 1000 * system / count,
                    "wall_ms": 1000 * wall / count,
                }
            )
    return rows


def markdown(r: dict[str, Any]) -> str:
    lines = [
        "## Server CPU per request (issue 17)",
        "",
        f"`{r['command']}` on {r['date']} at commit `{r['commit']}`, {r['machine']}, load "
        f"average {r['load'][0]:.1f} before and {r['load'][1]:.1f} after. One HTTP process of the web tier "
        f"(the matching worker and the other workers beside it) on the live benchmark's book "
        f"({r['offers']:,} open offers, {r['bids']:,} active bids); each request "
        f"{r['count']} times one after another, after {WARM} untimed; CPU is the server "
        "process's user and system time over them, wall the client's time per request.",
        "",
        "| request | server CPU, ms | wall, ms |",
        "|---|---|---|",
    ]
    lines += [
        f"| {row['request']} | {row['cpu_ms']:.2f} | {row['wall_ms']:.2f} |" for row in r["rows"]
    ]
    return "\n".join(lines)
