"""Server CPU per request (``ops/bench_live.py --request-costs N``): each kind of request the
live load sends, N times, to a single uvicorn process on the bench book, with the CPU time
that process spent on them (the scheduler's count of every thread, ``cpu_ns``). It is what a
profile would attribute to each request, without a profiler's overhead, and the figure that
decides how many requests a second the web tier can serve on this machine.

The machine's pace moves within seconds on a shared VM, and one kind measured after another
would carry those seconds into their comparison. So the N requests of each kind go in
``--rounds`` blocks, the kinds taken in turn within a round (in the other order the next
round), and a kind's figure is the median of its blocks, with the lowest and the highest
beside it. The report leads with the ratio of each figure to the issue's reference
(2026-11-24, ``REFERENCE``) and with issue 36's bars.

The pace of one core of the AMD EPYC VMs is not a drift but two levels, about 1.7x apart,
that the core switches between several times a second whatever this machine runs (the
host's other tenants; ``docs/benchmarks.md``, *The host's two paces*). A block's CPU takes
the level of the core it ran on. So where the machine has a second core the server process
is pinned to one core and the client to the other, the pace of the server's core is read
just before and just after every block, and each kind's blocks are also given apart by
pace (``by_pace``): those with both readings near the run's fastest, and those with both
far from it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from ops.benchmarks import machine
from ops.benchmarks.live.load import SUBJECT

BEGIN = "<!-- request costs: written by ops/bench_live.py --request-costs -->"
END = "<!-- end of the request costs -->"
WARM = 20
ROUNDS = 20
# A block ran at the fast pace if both its readings are within this factor of the run's
# fastest reading, at the slow pace if both are beyond it: the two levels are about 1.7x
# apart, and a reading's own noise is a few percent.
FAST_WITHIN = 1.3
# Iterations of a pace reading around a block: about 2.5 ms at the fast pace.
PACE_ITERATIONS = 200_000

BID = "`POST /api/v1/bids/` (a token)"
BEST = "`GET /api/v1/best-offers/?limit=50`"
NOT_FOUND = "`GET /api/v1/no-such-page/` (a 404)"
# The figures issue 36 takes its ratios to: this table's run of 2026-11-24 14:06 UTC (commit
# c4714ca, AMD EPYC, 2 cores; one run, each kind 300 times in a row).
REFERENCE = {
    BID: 9.50,
    BEST: 19.40,
    "`GET /api/v1/offers/<id>/`": 7.03,
    "`GET /api/v1/markets/`": 9.87,
    "`GET /healthz`": 5.37,
    NOT_FOUND: 2.17,
}
# Issue 36 item 2: the most server CPU each of these may cost on the AMD EPYC kind, in ms.
BARS = {BID: 3.0, BEST: 5.0, NOT_FOUND: 1.0}


def cpu_split(pid: int) -> tuple[float, float]:
    """The user and the system CPU time of process ``pid`` so far, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_ns(pid: int) -> int:
    """The CPU time every thread of ``pid`` has had so far, in nanoseconds (the scheduler's
    own count, ``/proc/<pid>/task/*/schedstat``): ``cpu_split``'s clock ticks are 10 ms, a
    tenth of a block of cheap requests."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:  # a thread that ended: its time is lost with it
            pass
    return total


def thread_ids(pid: int) -> set[int]:
    """The threads of ``pid`` now: one that ends during a block takes its time with it
    (``cpu_ns``), so the measures count such blocks."""
    return {int(task) for task in os.listdir(f"/proc/{pid}/task")}


def pin(pid: int, cpus: set[int]) -> None:
    """Keep every thread of process ``pid`` on ``cpus`` (threads it starts later inherit it)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(task), cpus)


def core_pace(cpu: int, iterations: int = PACE_ITERATIONS) -> float:
    """``machine.pace_ns`` read on ``cpu``: this thread moves there for the reading."""
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        return machine.pace_ns(iterations)
    finally:
        os.sched_setaffinity(0, mine)


def by_pace(blocks: list[float], paces: list[list[float]], fastest: float) -> dict[str, Any]:
    """``blocks`` (a kind's CPU per request, one figure a block) given apart by the pace of
    the server's core around each block (``paces``, the readings before and after it):
    the median and count of those that ran at the fast pace (both readings within
    ``FAST_WITHIN`` of ``fastest``, the run's fastest reading) and of those at the slow
    pace (both beyond it). A block with one reading each side counts in neither."""
    line = FAST_WITHIN * fastest
    fast = [b for b, p in zip(blocks, paces, strict=True) if max(p) <= line]
    slow = [b for b, p in zip(blocks, paces, strict=True) if min(p) > line]
    return {
        "fast_ms": statistics.median(fast) if fast else None,
        "fast_blocks": len(fast),
        "slow_ms": statistics.median(slow) if slow else None,
        "slow_blocks": len(slow),
    }


def spread(values: list[float]) -> dict[str, float]:
    """The median of ``values`` with the lowest and the highest."""
    return {"median": statistics.median(values), "low": min(values), "high": max(values)}


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
        (BID, bid, {201}),
        (
            BEST,
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
        (NOT_FOUND, get(lambda i: "/api/v1/no-such-page/"), {404}),
    ]


def measure(
    *,
    base_url: str,
    pid: int,
    token: str,
    offers: int,
    count: int,
    rounds: int = ROUNDS,
    profile: Path | None = None,
) -> dict[str, Any]:
    """Each request kind ``count`` times (after a few untimed), in ``rounds`` blocks taken in
    turn with the other kinds': per kind the median, lowest and highest of its blocks' server
    CPU per request and the client's wall time per request, in milliseconds. On two cores or
    more the server is pinned to one and this process to another, the server's core's pace
    read around every block (the module's docstring says why); on one, the pace is read
    before each round. Any answer but the expected status stops the bench. With ``profile``
    (a folder), each kind goes in one block, unpinned, py-spy recording the server during it
    into ``<profile>/<kind>.txt`` (its CPU figures then include py-spy's pauses)."""
    if profile is not None:
        rounds = 1  # py-spy attaches once per kind
    size = max(1, count // rounds)
    paces, ended = [], 0
    cores = sorted(os.sched_getaffinity(0))
    mine = set(cores)
    pinned = len(cores) >= 2 and profile is None
    server_core, client_core = cores[0], cores[-1]
    if pinned:
        pin(pid, {server_core})
        os.sched_setaffinity(0, {client_core})
    try:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            first = client.get("/api/v1/offers/?state=open&limit=1").json()["results"][0]["id"]
            kinds = _requests(token, first, offers)
            blocks: dict[str, list[float]] = {name: [] for name, _, _ in kinds}
            around: dict[str, list[list[float]]] = {name: [] for name in blocks}
            walls = dict.fromkeys(blocks, 0.0)
            systems = dict.fromkeys(blocks, 0.0)
            for _, send, _ in kinds:
                for i in range(WARM):
                    send(client, i)
            for r in range(rounds):
                if not pinned:
                    paces.append(machine.pace_ns())
                for name, send, expected in kinds if r % 2 == 0 else kinds[::-1]:
                    out = None if profile is None else profile / f"{_slug(name)}.txt"
                    ahead = core_pace(server_core) if pinned else None
                    with _profiled(pid, out):
                        threads, before, system = thread_ids(pid), cpu_ns(pid), cpu_split(pid)[1]
                        wall = time.perf_counter()
                        for i in range(r * size, (r + 1) * size):
                            answer = send(client, i)
                            if answer.status_code not in expected:
                                raise SystemExit(
                                    f"{name}: {answer.status_code} {answer.text[:200]}"
                                )
                        walls[name] += time.perf_counter() - wall
                        spent = (cpu_ns(pid) - before) / 1e9
                        systems[name] += cpu_split(pid)[1] - system
                    if ahead is not None:
                        around[name].append([ahead, core_pace(server_core)])
                    ended += bool(threads - thread_ids(pid))
                    blocks[name].append(1000 * spent / size)
    finally:
        if pinned:
            os.sched_setaffinity(0, mine)
            pin(pid, mine)
    readings = [pace for pairs in around.values() for pair in pairs for pace in pair]
    fastest = min(readings, default=0.0)
    done = size * rounds
    rows = []
    for name, values in blocks.items():
        cpu = spread(values)
        rows.append(
            {
                "request": name,
                "count": done,
                "cpu_ms": cpu["median"],
                "cpu_ms_low": cpu["low"],
                "cpu_ms_high": cpu["high"],
                "blocks": values,
                "system_ms": 1000 * systems[name] / done,
                "wall_ms": 1000 * walls[name] / done,
            }
        )
        if pinned:
            rows[-1] |= {"paces": around[name], **by_pace(values, around[name], fastest)}
    return {
        "rounds": rounds,
        "pace_ns": spread(readings if pinned else paces),
        "pinned": {"server": server_core, "client": client_core} if pinned else None,
        "blocks_with_a_thread_ended": ended,
        "rows": rows,
    }


def _cpu_cell(row: dict[str, Any]) -> str:
    if "cpu_ms_low" not in row:  # a result from before the blocks: one figure
        return f"{row['cpu_ms']:.2f}"
    return f"{row['cpu_ms']:.2f} ({row['cpu_ms_low']:.2f}-{row['cpu_ms_high']:.2f})"


def _bar_cell(row: dict[str, Any]) -> str:
    bar = BARS.get(row["request"])
    if bar is None:
        return ""
    return f"{bar:g} ms: " + ("met" if row["cpu_ms"] <= bar else "**missed**")


def markdown(r: dict[str, Any]) -> str:
    rounds = r.get("rounds", 1)
    how = (
        f"each request {r['count']} times in {rounds} blocks, the kinds taken in turn (the "
        f"order reversed every other round), after {WARM} untimed; a block's CPU is the "
        "server process's user and system time as the scheduler counts it, and a kind's "
        "figure the median of its blocks (the lowest and the highest in brackets)"
        if rounds > 1
        else f"each request {r['count']} times one after another, after {WARM} untimed; CPU "
        "is the server process's user and system time over them"
    )
    lines = [
        "## Server CPU per request (issues 17 and 36)",
        "",
        f"`{r['command']}` on {r['date']} at commit `{r['commit']}`, {r['machine']}, load "
        f"average {r['load'][0]:.1f} before and {r['load'][1]:.1f} after. One HTTP process of "
        "the web tier (the matching worker and the other workers beside it) on the live "
        f"benchmark's book ({r['offers']:,} open offers, {r['bids']:,} active bids); {how}; "
        "wall is the client's time per request. The ratio is to issue 36's reference, this "
        "table's run of 2026-11-24 (commit `c4714ca`, AMD EPYC, one run of each kind in a row).",
    ]
    pace, pinned = r.get("pace_ns"), r.get("pinned")
    if pace and pinned:
        lines += [
            "",
            f"The server process was pinned to CPU {pinned['server']} and the client to CPU "
            f"{pinned['client']}. The pace of the server's core, an empty Python loop's "
            "iteration read just before and just after every block, was "
            f"{pace['low']:.0f} ns at the fastest and {pace['high']:.0f} at the slowest "
            f"(median {pace['median']:.0f}). A block ran at the fast pace if both its "
            f"readings were within {FAST_WITHIN:g}x of the fastest, at the slow pace if both "
            "were beyond; the last two columns are the median of each kind's blocks of each "
            "(how many in brackets).",
        ]
    elif pace:
        lines += [
            "",
            f"The machine's pace: an empty Python loop took {pace['median']:.0f} ns an "
            f"iteration ({pace['low']:.0f}-{pace['high']:.0f}, read before each round). Every "
            "figure here moves with it.",
        ]
    if r.get("blocks_with_a_thread_ended"):
        lines += ["", f"Blocks in which a server thread ended: {r['blocks_with_a_thread_ended']}."]
    head = "| request | server CPU, ms | 2026-11-24, ms | ratio | issue 36's bar | wall, ms |"
    rule = "|---|---|---|---|---|---|"
    if pinned:
        head, rule = head + " fast pace, ms | slow pace, ms |", rule + "---|---|"
    lines += ["", head, rule]
    for row in r["rows"]:
        reference = REFERENCE.get(row["request"])
        then, ratio = ("", "") if reference is None else (f"{reference:.2f}", "")
        if reference is not None and row["cpu_ms"] > 0:
            ratio = f"{reference / row['cpu_ms']:.1f}x"
        line = (
            f"| {row['request']} | {_cpu_cell(row)} | {then} | {ratio} | {_bar_cell(row)} "
            f"| {row['wall_ms']:.2f} |"
        )
        if pinned:
            line += f" {_paced_cell(row, 'fast')} | {_paced_cell(row, 'slow')} |"
        lines.append(line)
    return "\n".join(lines)


def _paced_cell(row: dict[str, Any], pace: str) -> str:
    figure = row.get(f"{pace}_ms")
    count = row.get(f"{pace}_blocks", 0)
    return "- (0)" if figure is None else f"{figure:.2f} ({count})"
