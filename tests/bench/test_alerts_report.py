"""The alerts benchmark's parts of docs/benchmarks.md: a run of ``ops/bench alerts`` replaces
only its block between its markers (the notes around it stay); ``--bid-path``'s subsection,
its mix of subscriptions over the book and its ratios against issue 35's 10%; ``ops/bench
subscriptions``' subsection; and the follower both stack benchmarks share."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from matching.subscriptions import parse_query
from ops.benchmarks import alerts, machine
from ops.benchmarks.follow import quantiles, stream_id
from ops.benchmarks.report import alerts as report
from ops.benchmarks.report import subscriptions as subscriptions_report
from tests.bench.test_live_sweep_report import run


def alerts_run(size: int, p50: float) -> dict[str, Any]:
    q = {"p50_ms": p50, "p99_ms": 4 * p50, "max_ms": 5 * p50}
    return {
        "subscriptions": size,
        "registering_per_s": 1800,
        "first_10000_s": 5.4,
        "events": 3000,
        "rate": 50.0,
        "seconds": 60.0,
        "notifications_per_s": 229,
        "frame": q,
        "frames": 520,
        "row": q,
        "lag_max": 3,
        "lag_last": 0,
        "drain_s": 0.3,
        "engine_cpu_s": [12.0, 11.0],
        "rss_kb_per_subscription": 7.5,
        "load_start": [0.6, 0.5, 0.4],
        "load_run": [1.5, 1.0, 0.5],
    }


RESULT = {
    "date": "2026-11-28 17:00 UTC",
    "commit": "abc1234",
    "cpu": "AMD EPYC",
    "cores": 2,
    "runs": [alerts_run(1000, 17.0), alerts_run(10_000, 24.0)],
}


def test_a_run_replaces_only_its_block_and_keeps_the_notes_around_it(tmp_path: Path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        f"# Benchmarks\n\n{report.TITLE}\n\n{report.BEGIN}\nold table\n{report.END}\n\n"
        "**Again on a quiet machine** (written by hand)\n\n## Fairness\n\nkept\n"
    )
    report.splice(doc, RESULT)
    report.splice(doc, RESULT)
    text = doc.read_text()
    assert "old table" not in text
    assert text.count(report.BEGIN) == text.count(report.END) == 1
    assert text.count(report.TITLE) == 1
    assert "**Again on a quiet machine** (written by hand)\n\n## Fairness\n\nkept\n" in text
    block = text.split(report.BEGIN + "\n")[1].split(report.END)[0]
    assert block.startswith("`ops/bench alerts`, 2026-11-28 17:00 UTC, commit abc1234, AMD EPYC")
    assert "at 50 a second for 60 s" in block
    assert "| 10,000 | 1,800 | 5.4 | 3,000 (50) |" in block


def test_a_report_without_the_section_gets_it_whole_with_the_markers(tmp_path: Path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Where the missed targets lose their time\n\nlast\n")
    report.splice(doc, RESULT)
    text = doc.read_text()
    assert text.index(report.TITLE) < text.index(report.BEGIN) < text.index(report.END)
    assert text.index(report.END) < text.index("## Where the missed targets")
    assert "The largest size run: 10,000" in text


def test_the_bid_path_mix_is_70_20_10_over_100_ranges_of_the_books_offers():
    rng = random.Random(1)
    queries = [alerts.bid_path_query(i, rng, 501, 10_000) for i in range(1000)]
    kinds = Counter(parse_query(q).kind.value for q in queries)
    assert kinds == {"events": 700, "pattern": 200, "state": 100}
    assert "offer >= 501, offer <= 600, value > 1." in queries[0]
    assert "offer >= 10301 AND offer <= 10400" in queries[98]  # form 3, the 99th range
    assert "offer >= 501, offer <= 600, value > 1." in queries[100]  # the first range again
    assert "offer BETWEEN 1401 AND 1500" in queries[9]
    assert all("type = 'best_offer'" in q for q in queries if "FROM offers" not in q)


def bid_path_result(with_p99: float) -> dict[str, Any]:
    return {
        "command": ".venv/bin/python ops/benchmarks/alerts.py --bid-path",
        "date": "2026-11-28 17:00 UTC",
        "commit": "abc1234",
        "cpu": "AMD EPYC",
        "cores": 2,
        "offers": 10_000,
        "bids": 100_000,
        "offers_logged": 10_000,
        "rate": 50.0,
        "readers": 20.0,
        "seconds": 60.0,
        "web_workers": 2,
        "socket_workers": 1,
        "engines": 2,
        "registered": 10_000,
        "registering_s": 5.4,
        "joined_s": 3.0,
        "rss_kb_per_subscription": 6.1,
        "without": run(50, 400.0),
        "with": run(50, with_p99),
        "alerts": {
            "notifications": 210_000,
            "notifications_per_s": 3500,
            "followed": 40,
            "frames": 1190,
            "frame": {"p50_ms": 24.0, "p99_ms": 180.0, "max_ms": 300.0},
            "row": {"p50_ms": 11.0, "p99_ms": 90.0, "max_ms": 200.0},
            "engine_cpu_s": [20.0, 19.0],
            "lag_max": 40,
            "lag_last": 0,
            "drain_s": 0.2,
        },
        "verify": "best-offer table is correct for 10000 open offer(s)",
    }


def test_the_bid_path_subsection_gives_both_runs_and_their_ratio():
    held = report.bid_path_section(bid_path_result(440.0))
    lines = held.splitlines()
    assert lines[0] == report.BID_PATH_TITLE
    assert "| without | 0 | 49.5 | 100 / 400 | 100 / 400 |" in held
    assert "| with | 10,000 | 49.5 | 110 / 440 | 110 / 440 |" in held
    assert "| with / without | | | x1.10 / x1.10 | x1.10 / x1.10 |" in held
    assert "**held**" in held
    assert "log to `sub:` frame 24 / 180 / 300 ms p50 / p99 / max (1,190 frames of 40" in held
    assert "engines' CPU 20 + 19 s" in held
    missed = report.bid_path_section(bid_path_result(441.0))
    assert "| with / without | | | x1.10 / x1.10 |" in missed
    assert "**missed**" in missed


def test_the_bid_path_verdict_is_withheld_when_a_run_did_not_carry_the_load():
    broken = bid_path_result(440.0)
    broken["without"] = run(50, 400.0, errors=3)
    text = report.bid_path_section(broken)
    assert "**not comparable**: the run without did not carry the load" in text
    assert "**held**" not in text
    slow = bid_path_result(440.0)
    slow["without"]["achieved_rate"] = slow["with"]["achieved_rate"] = 44.9
    text = report.bid_path_section(slow)
    assert "**not comparable**: the runs without and with did not carry" in text
    assert report.carried({**run(50, 1.0), "achieved_rate": 45.0})


def test_the_bid_path_subsection_is_replaced_between_its_markers(tmp_path: Path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"above\n{report.BID_PATH_BEGIN}\nnot yet run\n{report.BID_PATH_END}\nbelow\n")
    report.bid_path_into(doc, bid_path_result(440.0))
    report.bid_path_into(doc, bid_path_result(500.0))
    text = doc.read_text()
    assert text.startswith(f"above\n{report.BID_PATH_BEGIN}\n{report.BID_PATH_TITLE}\n")
    assert text.endswith(f"{report.BID_PATH_END}\nbelow\n")
    assert text.count(report.BID_PATH_TITLE) == 1
    assert "x1.25" in text


def test_ops_bench_subscriptions_writes_its_subsection_under_the_current_title(tmp_path: Path):
    result = {
        "date": "2026-11-28 17:00 UTC",
        "commit": "abc1234",
        "cpu": "AMD EPYC",
        "cores": 2,
        "load_before": 0.5,
        "load_after": 1.0,
        "subscriptions": 10_000,
        "book": {"offers": 1000, "bids": 5000},
        "owners": 100,
        "registering_s": 5.0,
        "cycles": 20,
        "ms_with": 30.0,
        "ms_without": 29.0,
        "pass_ms": 100.0,
        "passes": [{"events": 40, "notifications": 400, "ms": 100.0, "_read": 10.0}],
    }
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        f"## Alerts\n\n{subscriptions_report.BEGIN}\nnot yet run\n{subscriptions_report.END}\n"
        "\n## Fairness\n"
    )
    subscriptions_report.splice(doc, result)
    text = doc.read_text()
    assert subscriptions_report.TITLE.startswith("### ")
    assert "## Live subscriptions: many on one market" not in text
    assert text.startswith(
        f"## Alerts\n\n{subscriptions_report.BEGIN}\n{subscriptions_report.TITLE}\n"
    )
    assert text.endswith(f"{subscriptions_report.END}\n\n## Fairness\n")


def test_the_follower_reads_the_subscription_of_a_stream_and_the_spread_of_delays():
    assert stream_id("sub:42") == 42
    assert stream_id("market:office.supplies.pencils") == 0
    assert stream_id("sub:") == 0
    assert quantiles([]) == {"p50_ms": None, "p99_ms": None, "max_ms": None}
    assert quantiles([0.001 * n for n in range(1, 101)]) == {
        "p50_ms": 51.0,
        "p99_ms": 100.0,
        "max_ms": 100.0,
    }


def test_the_bid_path_subsection_says_where_each_runs_cpu_went():
    r = bid_path_result(440.0)
    assert "CPU seconds" not in report.bid_path_section(r)  # results from before it was kept
    r["without"]["cpu_s"] = {"HTTP": 30.0, "postgres": 20.5, "load": 5.0, "beat": 0.4}
    r["with"]["cpu_s"] = {"postgres": 31.0, "HTTP": 30.5, "engines": 18.2, "beat": 0.5}
    lines = report.bid_path_section(r).splitlines()
    head = "| CPU seconds | postgres | HTTP | engines | load | the rest | all |"
    table = lines[lines.index(head) :]
    assert table[2] == "| without | 20.5 | 30.0 | 0.0 | 5.0 | 0.4 | 55.9 |"
    assert table[3] == "| with | 31.0 | 30.5 | 18.2 | 0.0 | 0.5 | 80.2 |"


def test_the_cpu_split_names_each_process_of_the_stack_by_its_command_line():
    before = machine.cpu_snapshot()
    me = os.getpid()
    assert before[me][0] == "load"
    spin = [sys.executable, "-c", "while True: pass"]
    children = [
        subprocess.Popen([*spin, "--role", "web"]),
        subprocess.Popen([*spin, "celery", "worker", "--role", "matching"]),
        # a word "postgres" among the arguments does not make a PostgreSQL process
        subprocess.Popen([*spin, "celery", "worker", "--role", "tasks", "-U", "postgres"]),
    ]
    try:
        for child in children:
            while machine.cpu_snapshot().get(child.pid, ("", 0.0))[1] < 0.5:
                time.sleep(0.05)  # until the child has spent half a second
        spent = machine.cpu_by_kind(before)
    finally:
        for child in children:
            child.kill()
            child.wait()
    assert spent["HTTP"] >= 0.5
    assert spent["worker matching"] >= 0.5
    assert spent["worker tasks"] >= 0.5
    assert list(spent.values()) == sorted(spent.values(), reverse=True)


def test_a_backend_that_ended_counts_through_the_postmaster_that_reaped_it(tmp_path: Path):
    # A stand-in postmaster (a Python named postgres) whose child spends half a second of
    # CPU and ends, reaped by it: gone from /proc, its time is in the parent's children's.
    postmaster = tmp_path / "postgres"
    postmaster.symlink_to(sys.executable)
    backend = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
    script = (
        "import subprocess, sys, time\n"
        f"subprocess.run([sys.executable, '-c', {backend!r}], check=True)\n"
        "print('reaped', flush=True)\n"
        "time.sleep(60)\n"
    )
    before = machine.cpu_snapshot()
    parent = subprocess.Popen([str(postmaster), "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "reaped\n"
        now = machine.cpu_snapshot()
        spent = machine.cpu_by_kind(before)
    finally:
        parent.kill()
        parent.wait()
    assert now[parent.pid][0] == "postgres"
    # Half a second in clock ticks of 10 ms, under the backends' kind, and counted in the
    # split (the stand-in started after ``before``, so all of it); its own time is apart.
    kind, reaped = now[-parent.pid]
    assert kind == "postgres backends" and reaped >= 0.45
    assert spent["postgres backends"] >= round(reaped, 1)  # the split rounds to tenths
    assert now[parent.pid][1] < 0.45


def test_a_backend_that_ended_counts_only_what_it_spent_since_the_first_reading(monkeypatch):
    # Backend 11 had spent 2.0 s before; it ended at 2.5 s, and its postmaster (10) reaped
    # it: the postmaster's children's time grew by all 2.5, of which 0.5 is this run's.
    before = {
        10: ("postgres", 1.0),
        -10: ("postgres backends", 5.0),
        11: ("postgres backends", 2.0),
        12: ("HTTP", 3.0),
        13: ("HTTP", 4.0),  # ended too, reaped by no postmaster: lost, as before
    }
    now = {10: ("postgres", 1.1), -10: ("postgres backends", 7.5), 12: ("HTTP", 3.5)}
    monkeypatch.setattr(machine, "cpu_snapshot", lambda: now)
    assert machine.cpu_by_kind(before) == {"HTTP": 0.5, "postgres backends": 0.5, "postgres": 0.1}


def test_a_postgres_process_is_named_by_its_title():
    assert machine._postgres_kind("/usr/lib/postgresql/15/bin/postgres\0-D\0x") == "postgres"
    title = "postgres: intersect intersect_bench 127.0.0.1(51234) idle"
    assert machine._postgres_kind(title) == "postgres backends"
    title = "postgres: walsender postgres [local] streaming 4/88FCA300"
    assert machine._postgres_kind(title) == "postgres walsender"
    assert machine._postgres_kind("postgres: startup recovering 0001") == "postgres startup"
