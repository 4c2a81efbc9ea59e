"""``ops/bench_live.py --request-costs``: the CPU a process spent, read from /proc, and the
table it writes into docs/benchmarks.md."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from ops.bench_live import parse_args
from ops.benchmarks import machine
from ops.benchmarks.live import costs, paired, report


def test_cpu_split_is_the_process_time_the_kernel_counts():
    before, clock = sum(costs.cpu_split(os.getpid())), time.process_time()
    total = 0
    while time.process_time() - clock < 0.3:
        total += sum(range(1000))
    spent = sum(costs.cpu_split(os.getpid())) - before
    # The kernel counts in clock ticks (10 ms here), user and system time each.
    assert abs(spent - (time.process_time() - clock)) <= 0.03
    assert total > 0


def _summary(rows: list[dict], **more) -> dict:
    return {
        "command": ".venv/bin/python ops/bench_live.py --request-costs 5",
        "date": "2026-11-24 14:00 UTC",
        "commit": "abc",
        "machine": "2 cores",
        "load": [0.5, 1.25],
        "offers": 10_000,
        "bids": 100_000,
        "count": 5,
        "rows": rows,
        **more,
    }


def test_the_table_has_a_row_per_request_between_its_markers(tmp_path: Path):
    summary = _summary(
        [
            {"request": "`GET /healthz`", "count": 5, "cpu_ms": 4.936, "wall_ms": 7.2},
            {"request": "a 404", "count": 5, "cpu_ms": 2.2, "wall_ms": 3.704},
        ]
    )
    text = costs.markdown(summary)
    # A result from before the blocks: one figure, and the ratio to the reference's row.
    assert "| `GET /healthz` | 4.94 | 5.37 | 1.1x |  | 7.20 |" in text
    assert "| a 404 | 2.20 |  |  |  | 3.70 |" in text
    assert "load average 0.5 before and 1.2 after" in text
    assert "one after another" in text and "pace" not in text
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nkept\n")
    report.splice(doc, costs.BEGIN, costs.END, text)
    report.splice(doc, costs.BEGIN, costs.END, text.replace("4.94", "3.00"))
    written = doc.read_text()
    assert written.count(costs.BEGIN) == 1 and "kept" in written
    assert "| `GET /healthz` | 3.00 | 5.37 |" in written


def test_the_table_leads_with_the_blocks_median_its_ratio_and_the_bar():
    def row(name: str, blocks: list[float]) -> dict:
        cpu = costs.spread(blocks)
        return {
            "request": name,
            "count": 300,
            "cpu_ms": cpu["median"],
            "cpu_ms_low": cpu["low"],
            "cpu_ms_high": cpu["high"],
            "blocks": blocks,
            "wall_ms": 6.0,
        }

    rows = [
        row(costs.BID, [3.1, 2.5, 2.7, 2.6, 3.4]),
        row(costs.BEST, [5.5, 5.2, 5.1]),
        row(costs.NOT_FOUND, [0.4, 0.5]),
    ]
    pace = {"median": 31.4, "low": 28.0, "high": 40.2}
    text = costs.markdown(
        _summary(rows, rounds=5, pace_ns=pace, blocks_with_a_thread_ended=1, count=300)
    )
    assert "| `POST /api/v1/bids/` (a token) | 2.70 (2.50-3.40) | 9.50 | 3.5x | 3 ms: met |" in text
    assert "| 5.20 (5.10-5.50) | 19.40 | 3.7x | 5 ms: **missed** | 6.00 |" in text
    # An even number of blocks: the median is the middle two's mean.
    assert (
        "| `GET /api/v1/no-such-page/` (a 404) | 0.45 (0.40-0.50) | 2.17 | 4.8x | 1 ms: met |"
        in text
    )
    assert "each request 300 times in 5 blocks" in text
    assert "took 31 ns an iteration (28-40, read before each round)" in text
    assert "Blocks in which a server thread ended: 1." in text


def test_the_pace_is_the_cpu_time_of_an_empty_loops_iteration():
    # A loop twice as long takes about twice the CPU: the figure is per iteration.
    short = min(machine.pace_ns(200_000) for _ in range(5))
    long = min(machine.pace_ns(400_000) for _ in range(5))
    assert short > 0 and long > 0
    assert 0.67 < short / long < 1.5  # not per iteration, it would be 0.5


def test_rounds_need_a_request_each():
    assert parse_args(["--request-costs", "300"]).rounds == costs.ROUNDS
    assert parse_args(["--request-costs", "300", "--rounds", "3"]).rounds == 3
    with pytest.raises(SystemExit):
        parse_args(["--request-costs", "300", "--rounds", "0"])
    with pytest.raises(SystemExit):
        parse_args(["--request-costs", "4", "--rounds", "5"])


def test_block_cpu_is_the_scheduler_count_of_every_live_thread():
    before, clock = costs.cpu_ns(os.getpid()), time.process_time()
    spun, counted = threading.Event(), threading.Event()

    def spin() -> None:
        end = time.thread_time() + 0.2
        while time.thread_time() < end:
            pass

    def spin_and_stay() -> None:
        spin()
        spun.set()
        counted.wait(10)  # an ended thread is no longer listed: read while it lives

    worker = threading.Thread(target=spin_and_stay)
    worker.start()
    spin()
    assert spun.wait(10)
    spent = (costs.cpu_ns(os.getpid()) - before) / 1e9
    elapsed = time.process_time() - clock
    counted.set()
    worker.join()
    # Both threads' time, to well within a clock tick (the scheduler counts nanoseconds).
    assert spent >= 0.4
    assert abs(spent - elapsed) <= 0.02
    assert costs.thread_ids(os.getpid()) >= {os.getpid()}


def test_the_paired_table_has_both_sides_and_their_ratios():
    row = {
        "before": {"median": 10.0, "low": 9.0, "high": 12.0},
        "after": {"median": 8.0, "low": 7.5, "high": 9.0},
        "ratio_of_medians": 1.25,
        "median_paired_ratio": 1.2,
    }
    text = paired.markdown({"kinds": {"a bid": row}, "load": [3.0, 4.25]})
    assert "| a bid | 10.00 (9.00-12.00) | 8.00 (7.50-9.00) | 1.25x | 1.20x |" in text
    assert "load average 3.0 before, 4.2 after" in text


def test_blocks_are_given_apart_by_the_pace_around_them():
    blocks = [2.0, 2.2, 3.5, 3.9, 2.8, 2.4]
    paces = [
        [10.0, 10.5],  # fast: both within 1.3x of the fastest (13.0)
        [12.9, 10.0],  # fast: 12.9 is within
        [18.0, 19.0],  # slow: both beyond
        [13.1, 20.0],  # slow: 13.1 is beyond
        [10.0, 18.0],  # one each side: neither
        [18.0, 10.0],  # neither
    ]
    assert costs.by_pace(blocks, paces, 10.0) == {
        "fast_ms": 2.1,
        "fast_blocks": 2,
        "slow_ms": 3.7,
        "slow_blocks": 2,
    }
    assert costs.by_pace([2.0], [[10.0, 30.0]], 10.0) == {
        "fast_ms": None,
        "fast_blocks": 0,
        "slow_ms": None,
        "slow_blocks": 0,
    }


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_pinning_moves_every_thread_and_a_core_pace_is_read_on_that_core(monkeypatch):
    cores = sorted(os.sched_getaffinity(0))
    read_on: list[set[int]] = []
    real_pace = machine.pace_ns

    def pace(iterations: int) -> float:
        read_on.append(os.sched_getaffinity(0))
        return real_pace(iterations)

    monkeypatch.setattr(machine, "pace_ns", pace)
    started, stop = threading.Event(), threading.Event()
    seen: list[set[int]] = []

    def wait() -> None:
        started.set()
        stop.wait(10)
        seen.append(os.sched_getaffinity(0))

    worker = threading.Thread(target=wait)
    worker.start()
    assert started.wait(10)
    try:
        costs.pin(os.getpid(), {cores[-1]})
        assert os.sched_getaffinity(0) == {cores[-1]}
        # The reading moves this thread to the core asked for and back.
        assert costs.core_pace(cores[0], 20_000) > 0
        assert read_on == [{cores[0]}]
        assert os.sched_getaffinity(0) == {cores[-1]}
    finally:
        stop.set()
        worker.join()
        costs.pin(os.getpid(), set(cores))
    assert seen == [{cores[-1]}]
    assert os.sched_getaffinity(0) == set(cores)


def test_a_pinned_run_says_where_each_side_ran_and_gives_each_pace_its_column():
    row = {
        "request": costs.BID,
        "count": 300,
        "cpu_ms": 2.6,
        "cpu_ms_low": 2.0,
        "cpu_ms_high": 4.1,
        "blocks": [2.0, 2.6, 4.1],
        "wall_ms": 6.0,
        "paces": [[10.0, 10.0], [10.0, 18.0], [18.0, 19.0]],
        **costs.by_pace([2.0, 2.6, 4.1], [[10.0, 10.0], [10.0, 18.0], [18.0, 19.0]], 10.0),
    }
    pace = {"median": 14.0, "low": 10.0, "high": 19.0}
    text = costs.markdown(
        _summary([row], rounds=3, pace_ns=pace, pinned={"server": 0, "client": 1}, count=300)
    )
    assert "pinned to CPU 0 and the client to CPU 1" in text
    assert "was 10 ns at the fastest and 19 at the slowest (median 14)" in text
    assert "| wall, ms | fast pace, ms | slow pace, ms |" in text
    assert "| 2.60 (2.00-4.10) | 9.50 | 3.7x | 3 ms: met | 6.00 | 2.00 (1) | 4.10 (1) |" in text
    assert "read before each round" not in text
