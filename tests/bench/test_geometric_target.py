"""SPEC 9's bar for the fixed geometric workload at 1,000,000 subscriptions: `range`'s
median within two bare round trips to PostgreSQL timed in the same run."""

from __future__ import annotations

from typing import Any

from ops.benchmarks.report.doc import Doc
from ops.benchmarks.report.targets import geometric_row, misses_explained


def experiment(range_s: float, trip_s: float | None) -> dict[str, Any]:
    e: dict[str, Any] = {
        "figure": 5,
        "kind": "geometric",
        "subs": 1_000_000,
        "loads": {},
        "batches": [
            {
                "batch": 1,
                "pairs": 3,
                "times": {"paper": {"median": 0.004}, "range": {"median": range_s}},
            }
        ],
        "plans": {},
    }
    if trip_s is not None:
        e["round_trip"] = {"median": trip_s, "mean": trip_s, "runs": [trip_s]}
    return e


def row(e: dict[str, Any]) -> tuple[Doc, str]:
    doc = Doc({"experiments": [e]})
    geometric_row(doc, e)
    (line,) = doc.lines
    return doc, line


def test_range_within_two_round_trips_meets_the_bar() -> None:
    doc, line = row(experiment(range_s=0.00048, trip_s=0.00030))
    assert "1.60 round trips (`range` 0.48 ms, `SELECT 1` 0.30 ms; `paper` 4.00 ms)" in line
    assert line.endswith("| **met** |")
    assert doc.misses == []


def test_range_beyond_two_round_trips_is_a_miss_by_its_factor() -> None:
    doc, line = row(experiment(range_s=0.00090, trip_s=0.00030))
    assert "3.00 round trips" in line
    assert "**missed**, by 1.5× (3 round trips for 2)" in line
    assert doc.misses == ["round_trips_geometric"]


def test_a_run_without_a_timed_round_trip_says_so() -> None:
    doc, line = row(experiment(range_s=0.00048, trip_s=None))
    assert "no round trip timed in this run" in line
    assert line.endswith("| not measured |")
    assert doc.misses == []


def test_no_geometric_experiment_is_not_measured() -> None:
    doc = Doc({"experiments": []})
    geometric_row(doc, None)
    assert doc.lines == ["| fixed geometric at 1,000,000 | not measured in this run | | |"]


def test_a_miss_is_explained_from_the_range_plan() -> None:
    e = experiment(range_s=0.00090, trip_s=0.00030)
    doc = Doc({"experiments": [e]})
    geometric_row(doc, e)
    misses_explained(doc)
    text = doc.text()
    assert "* **fixed geometric at 1,000,000**: `range`:" in text
    assert "one GiST probe" in text
