"""``ops/bench_live.py --request-costs``: the CPU a process spent, read from /proc, and the
table it writes into docs/benchmarks.md."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

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


def test_the_table_has_a_row_per_request_between_its_markers(tmp_path: Path):
    summary = {
        "command": ".venv/bin/python ops/bench_live.py --request-costs 5",
        "date": "2026-11-24 14:00 UTC",
        "commit": "abc",
        "machine": "2 cores",
        "load": [0.5, 1.25],
        "offers": 10_000,
        "bids": 100_000,
        "count": 5,
        "rows": [
            {"request": "`GET /healthz`", "count": 5, "cpu_ms": 4.936, "wall_ms": 7.2},
            {"request": "a 404", "count": 5, "cpu_ms": 2.2, "wall_ms": 3.704},
        ],
    }
    text = costs.markdown(summary)
    assert "| `GET /healthz` | 4.94 | 7.20 |" in text
    assert "| a 404 | 2.20 | 3.70 |" in text
    assert "load average 0.5 before and 1.2 after" in text
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nkept\n")
    report.splice(doc, costs.BEGIN, costs.END, text)
    report.splice(doc, costs.BEGIN, costs.END, text.replace("4.94", "3.00"))
    written = doc.read_text()
    assert written.count(costs.BEGIN) == 1 and "kept" in written
    assert "| `GET /healthz` | 3.00 | 7.20 |" in written


def test_paired_cpu_is_the_scheduler_count_of_every_live_thread():
    before, clock = paired.cpu_ns(os.getpid()), time.process_time()
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
    spent = (paired.cpu_ns(os.getpid()) - before) / 1e9
    elapsed = time.process_time() - clock
    counted.set()
    worker.join()
    # Both threads' time, to well within a clock tick (the scheduler counts nanoseconds).
    assert spent >= 0.4
    assert abs(spent - elapsed) <= 0.02
    assert paired.thread_ids(os.getpid()) >= {os.getpid()}


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
