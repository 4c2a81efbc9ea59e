"""``ops/bench_live.py --sweep``'s report: which rates held SPEC 9's bar, the table, and the
section it keeps in docs/benchmarks.md between its markers (replaced, never repeated)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ops.benchmarks.live import report


def run(rate: float, p99: float, *, errors: int = 0, stored: int = 100) -> dict[str, Any]:
    spread = {"p50": p99 / 4, "p90": p99 / 2, "p99": p99, "min": 1.0, "max": p99 * 2}
    return {
        "rate": rate,
        "achieved_rate": rate - 0.5,
        "frame_ms": spread,
        "ack_ms": spread,
        "frames": 98,
        "unanswered": 2,
        "lost_frames": 0,
        "bids_sent": 100,
        "acknowledged": 100,
        "stored": stored,
        "reads": 10,
        "errors": errors,
        "first_errors": [],
        "cycles": {"count": 40, "mean_ms": 12.0, "mean_changes": 2.5, "max_ms": 30.0},
        "load_average": (1.5, 1.0, 1.0),
    }


def sweep(*runs: dict[str, Any]) -> dict[str, Any]:
    return {
        "command": ".venv/bin/python ops/bench_live.py --sweep 50,100,150",
        "date": "2026-11-24 03:00 UTC",
        "commit": "abc1234",
        "machine": "2 cores",
        "offers": 10_000,
        "bids": 100_000,
        "readers": 20.0,
        "seconds": 60.0,
        "web_workers": 2,
        "verify": "best-offer table is correct for 10000 open offer(s)",
        "runs": list(runs),
    }


def test_a_rate_holds_only_within_p99_with_no_error_and_every_bid_stored():
    assert report.held(run(50, 500.0))
    assert not report.held(run(50, 501.0))
    assert not report.held(run(50, 100.0, errors=1))
    assert not report.held(run(50, 100.0, stored=99))
    # Frames not seen (a bid overtaken in the same cycle is never announced) do not count,
    # unless the best-offer history says the bid was announced: then its frame was lost.
    assert report.held(run(50, 100.0) | {"unanswered": 7})
    assert not report.held(run(50, 100.0) | {"unanswered": 7, "lost_frames": 1})


def test_a_run_from_before_the_announced_check_shows_a_dash():
    old = run(50, 120.0)
    del old["lost_frames"]
    assert report.sweep_rows(sweep(old))[2].split(" | ")[6] == "2 (–)"


def test_the_table_has_a_row_per_rate_and_names_the_highest_rate_held():
    r = sweep(run(50, 120.0), run(100, 450.0), run(150, 900.0))
    rows = report.sweep_rows(r)
    assert (
        rows[2] == "| 50 | 49.5 | 30 / 60 / 120 | 30 / 60 / 120 | 40 | 2.5 | 2 (0) | 0 | yes | – |"
    )
    assert rows[4].startswith("| 150 | 149.5 | 225 / 450 / 900 |")
    assert rows[4].endswith("| no | – |")
    assert len(rows) == 2 + 3
    assert "Highest rate held: **100 bids/s**" in report.sweep_markdown(r)
    assert "none of the rates offered" in report.sweep_markdown(sweep(run(50, 900.0)))


def test_a_row_shows_where_the_time_to_the_frame_went():
    stage = {"p50": 10.0, "p90": 20.0, "p99": 40.0, "min": 1.0, "max": 50.0}
    split = {"request": stage, "queue": stage | {"p50": 55.0}, "cycle": stage, "push": None}
    rows = report.sweep_rows(sweep(run(50, 120.0) | {"stages_ms": split}))
    assert rows[2].endswith("| yes | request 10 / 40; queue 55 / 40; cycle 10 / 40; push – / – |")


def test_the_section_is_replaced_between_its_markers(tmp_path: Path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nearlier sections\n")
    report.sweep_into(doc, sweep(run(50, 120.0)))
    report.sweep_into(doc, sweep(run(50, 120.0), run(100, 900.0)))
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nearlier sections\n\n")
    assert text.count(report.SWEEP_BEGIN) == text.count(report.SWEEP_END) == 1
    assert "| 100 | 99.5 |" in text
    assert (tmp_path / report.SWEEP_PLOT).stat().st_size > 0


def test_the_section_says_whether_a_warm_up_came_before_the_measured_load():
    warmed = sweep(run(120, 300.0)) | {
        "warmup": {"seconds": 5.0, "rate": 120.0, "bids": 600, "errors": 2, "frame_ms": None}
    }
    assert (
        "Before it, 5 s of the same load at 120 bids/s warmed the stack just started and are "
        "not counted (600 bids, 2 errors; its bids stay in the book the measured runs start "
        "on)." in report.sweep_markdown(warmed)
    )
    # A result from before the warm-up existed, or one run with --warmup 0
    for cold in (sweep(run(120, 300.0)), sweep(run(120, 300.0)) | {"warmup": {"seconds": 0}}):
        assert "The measured load began as soon as the stack answered." in report.sweep_markdown(
            cold
        )
