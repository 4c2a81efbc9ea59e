"""``ops/bench_live.py --aged``: its options, the mixed run's plan, and the section with
both runs side by side that it keeps in docs/benchmarks.md between its own markers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ops.bench_live import parse_args
from ops.benchmarks.live import aged, report
from tests.bench.test_live_sweep_report import run


def summary() -> dict[str, Any]:
    mixed = {
        "count": 4000,
        "concurrency": 16,
        "seconds": 212.4,
        "sent": dict.fromkeys(aged.KINDS, 4000) | {"bid withdrawn": 2000},
        "done": dict.fromkeys(aged.KINDS, 4000) | {"bid withdrawn": 1999},
        "errors": 1,
        "first_errors": ["bid withdrawn: 400 b'not_open'"],
        "events": 21_345,
    }
    return {
        "command": ".venv/bin/python ops/bench_live.py --aged 4000",
        "date": "2026-11-28 17:00 UTC",
        "commit": "abc1234",
        "machine": "2 cores (AMD EPYC)",
        "offers": 10_000,
        "bids": 100_000,
        "readers": 20.0,
        "seconds": 60.0,
        "web_workers": 2,
        "socket_workers": 1,
        "rate": 50.0,
        "before": run(50, 200.0),
        "mixed": mixed,
        "after": run(50, 600.0),
        "book_after": [10_000, 105_000],
        "log_after": 30_000,
        "verify": "best-offer table is correct for 10000 open offer(s)",
    }


def test_aged_takes_a_positive_count_and_runs_one_rate():
    assert parse_args(["--aged", "500"]).aged == 500
    assert parse_args(["--aged"]).aged == 4000
    assert parse_args([]).aged is None
    for bad in (["--aged", "0"], ["--aged", "10", "--sweep", "50,100"]):
        with pytest.raises(SystemExit):
            parse_args(bad)


def test_the_web_tier_takes_a_free_port_unless_one_is_named():
    assert parse_args([]).port == 0
    assert parse_args(["--port", "18765"]).port == 18765


def test_the_mixed_run_has_each_lifecycle_count_times_in_a_seeded_order():
    steps = aged.plan(50, seed=7)
    assert sorted(steps) == sorted(
        [("bid", i) for i in range(50)] + [("subscription", i) for i in range(50)]
    )
    assert steps == aged.plan(50, seed=7)
    assert steps != aged.plan(50, seed=8)


def test_the_section_shows_both_runs_side_by_side_with_the_mixed_run_between():
    text = report.aged_markdown(summary())
    lines = text.splitlines()
    assert lines[0] == report.AGED_TITLE
    assert "2 cores (AMD EPYC)" in lines[2]
    assert "bid withdrawn 1,999 of 2,000" in lines[2]
    assert "21,345 events added to the log" in lines[2]
    assert (
        "(the book then 10,000 open offers, 105,000 active bids; the log 30,000 events)"
        in (lines[2])
    )
    before = next(line for line in lines if line.startswith("| before the mixed run |"))
    after = next(line for line in lines if line.startswith("| after it |"))
    assert before.startswith("| before the mixed run | 49.5 | 50 / 100 / 200 | 50 / 200 |")
    assert before.endswith("| 1.5 | yes |")
    assert after.startswith("| after it | 49.5 | 150 / 300 / 600 | 150 / 600 |")
    assert after.endswith("| no |")
    assert "frame p50 x3.00, p99 x3.00" in text
    assert "`verify_best_offers` afterwards: best-offer table is correct" in text
    assert "* `bid withdrawn: 400 b'not_open'`" in text


def test_the_section_is_replaced_between_its_markers_and_the_rest_kept(tmp_path: Path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        f"# Benchmarks\n\nabove\n\n{report.AGED_BEGIN}\nnot yet run\n{report.AGED_END}\n\nbelow\n"
    )
    report.aged_into(doc, summary())
    report.aged_into(doc, summary())
    text = doc.read_text()
    assert text.startswith(f"# Benchmarks\n\nabove\n\n{report.AGED_BEGIN}\n{report.AGED_TITLE}\n")
    assert text.endswith(f"{report.AGED_END}\n\nbelow\n")
    assert text.count(report.AGED_TITLE) == 1
    assert "not yet run" not in text
