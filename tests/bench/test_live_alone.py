"""``ops/bench --live-only``: the end-to-end run put into a whole run's report, changing
only its rows of the targets table, its sections and its explanation under the misses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ops.benchmarks.report.live_alone import splice

GEOMETRIC_ROW = "| fixed geometric, 1,000,000 subscriptions | 8.9× | | **missed**, by 1.1× |"
GEOMETRIC_WHY = "* **fixed geometric at 1,000,000**: the plan takes the time."

REPORT = f"""# Benchmarks

## Targets (SPEC 9)

| target | measured | paper (2006) | verdict |
|---|---|---|---|
| one publication | 0.42 ms | 17 ms | **met** |
| end to end, a bid over REST to its `best_offer` frame, p50 ≤ 100 ms (50 bids/s) | 96,499 ms | (not in the paper) | **missed**, by 965.0× |
| end to end, a bid over REST to its `best_offer` frame, p99 ≤ 500 ms (50 bids/s) | 218,939 ms | (not in the paper) | **missed**, by 437.9× |
{GEOMETRIC_ROW}

## End to end: a bid over REST to its best-offer frame (SPEC 9)

The old run: 96,499 ms.

## Sustained load: the rate the stack holds with no error and no lost order

The old load run.

## The matching index

Untouched.

## Where the missed targets lose their time

{GEOMETRIC_WHY}
* **End to end at 50 bids/s**: the median bid waited 102,498 ms for its 201.

## Plans

Untouched too.
"""


def run(rate: float, p50: float, p99: float) -> dict[str, Any]:
    spread = {"p50": p50, "p90": (p50 + p99) / 2, "p99": p99, "min": 1.0, "max": p99 * 2}
    return {
        "command": f".venv/bin/python ops/bench_live.py --rate {rate:g}",
        "date": "2026-11-25 02:00 UTC",
        "commit": "abc1234",
        "machine": "2 cores (Intel(R) Xeon(R) Processor)",
        "verify": "best-offer table is correct for 10000 open offer(s)",
        "load_average": (1.5, 1.0, 1.0),
        "offers": 10_000,
        "bids": 100_000,
        "web_workers": 2,
        "rate": rate,
        "readers": 20.0,
        "seconds": 60.0,
        "frame_ms": spread,
        "ack_ms": spread,
        "bids_sent": 3_000,
        "acknowledged": 3_000,
        "stored": 3_000,
        "frames": 2_999,
        "unanswered": 1,
        "lost_frames": 0,
        "reads": 1_200,
        "errors": 0,
        "achieved_rate": rate,
        "first_errors": [],
        "cycles": {"count": 1_400, "mean_ms": 24.0, "mean_changes": 2.1, "max_ms": 80.0},
    }


def spliced(tmp_path: Path, results: dict[str, Any]) -> str:
    report = tmp_path / "benchmarks.md"
    report.write_text(REPORT)
    splice(report, results)
    return report.read_text()


def test_met_targets_replace_their_rows_sections_and_drop_their_explanation(tmp_path):
    text = spliced(tmp_path, {"live": run(50, 68.0, 153.0), "load": run(100, 145.0, 392.0)})

    rows = [line for line in text.splitlines() if line.startswith("| end to end, ")]
    assert rows == [
        "| end to end, a bid over REST to its `best_offer` frame, p50 ≤ 100 ms (50 bids/s, "
        "10,000 offers, 100,000 bids) | 68 ms | (not in the paper) | **met** |",
        "| end to end, a bid over REST to its `best_offer` frame, p99 ≤ 500 ms (50 bids/s, "
        "10,000 offers, 100,000 bids) | 153 ms | (not in the paper) | **met** |",
    ]
    # The rows stay where they were, between the rows of the other targets.
    assert text.index("| one publication") < text.index(rows[0]) < text.index(GEOMETRIC_ROW)
    assert "96,499" not in text and "The old load run." not in text
    assert "`.venv/bin/python ops/bench_live.py --rate 50` on 2026-11-25 02:00 UTC" in text
    assert "2 cores (Intel(R) Xeon(R) Processor)" in text
    assert "| 2,999 (1 not seen within 30 s of the last POST, of them 0 announced;" in text
    assert "`.venv/bin/python ops/bench_live.py --rate 100`" in text
    assert "* **End to end at" not in text
    assert GEOMETRIC_WHY in text
    assert text.count("## End to end") == text.count("## Sustained load") == 1
    assert "## The matching index\n\nUntouched.\n" in text
    assert text.endswith("## Plans\n\nUntouched too.\n")


def test_a_missed_target_replaces_the_explanation_and_keeps_the_old_load_section(tmp_path):
    text = spliced(tmp_path, {"live": run(50, 150.0, 400.0)})

    assert "| 150 ms | (not in the paper) | **missed**, by 1.5× (150 ms for 100) |" in text
    assert "| 400 ms | (not in the paper) | **met** |" in text
    assert text.count("* **End to end at 50 bids/s**") == 1
    assert "102,498" not in text
    assert "The old load run." in text
    assert text.index(GEOMETRIC_WHY) < text.index("* **End to end at 50 bids/s**")


def test_the_explanations_section_goes_when_nothing_is_left_in_it(tmp_path):
    report = tmp_path / "benchmarks.md"
    report.write_text(REPORT.replace(GEOMETRIC_WHY + "\n", ""))
    splice(report, {"live": run(50, 68.0, 153.0)})
    text = report.read_text()

    assert "## Where the missed targets" not in text
    assert "## The matching index\n\nUntouched.\n\n## Plans" in text
