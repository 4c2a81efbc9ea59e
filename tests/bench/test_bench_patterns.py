"""The patterns benchmark: its report section (targets, measured against extrapolated
naive costs, splicing), and a tiny run whose set and naive outputs are compared by the
benchmark itself."""

from __future__ import annotations

from pathlib import Path

from matching.subscriptions import parse_query
from ops.benchmarks.patterns import KINDS, event_stream, measure, pattern_texts
from ops.benchmarks.report.patterns import splice


def _point(n: int, rate: float) -> dict[str, float]:
    return {
        "patterns": n,
        "events": 1000,
        "cpu_s": 1000 / rate,
        "wall_s": 2000 / rate,
        "events_per_s": rate,
        "us_per_event": 1e6 / rate,
        "sources_per_event": 3.0,
        "instances_touched_per_event": 4.5,
        "outputs_per_event": 0.25,
        "instances_held": 2 * n,
        "bytes_per_pattern": 5000.0,
        "full_collections": 0,
        "build_cpu_s": n / 1e4,
        "naive_us_per_event_extrapolated": 10.0 * n,
        "speedup": 10.0 * n * rate / 1e6,
    }


RESULTS = {
    "quick": False,
    "order": ["type", "offer", "price"],
    "markets": 100,
    "warm_events": 3000,
    "points": [_point(1_000, 20_000.0), _point(100_000, 6_000.0)],
    "naive": [{"patterns": 1_000, "events": 300, "cpu_s": 3.0, "us_per_event": 10_000.0}],
    "naive_us_per_pattern": 10.0,
    "exponent": 0.26,
    "seconds": 300.0,
    "load": 4.0,
    "date": "2026-11-24 06:00 UTC",
    "cpu": "Intel(R) Xeon(R) Processor",
    "cores": 2,
}  # fmt: skip


def test_section_reports_the_targets_and_marks_extrapolated_naive_costs(tmp_path: Path) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text(
        "# Benchmarks\n\n## The matching index\n\nx\n\n## Where the missed targets\n\ny\n"
    )
    text = splice(report, RESULTS).read_text()
    assert text.index("## The matching index") < text.index("## Patterns")
    assert text.index("## Patterns") < text.index("## Where the missed targets")
    assert "| 6,000 events/s at 100,000 | **met** |" in text
    assert "| 6,000× at 100,000 | **met** |" in text
    assert (
        "| 1,000 | 20,000 | 50.0 | 100.0 | 3.0 | 4.5 | 0.25 | 2,000 | 5,000 | 0 | 0.1 | 10,000 | 200× |"
        in text
    )
    assert "| 1,000,000 (extrapolated) | 6,000× |" in text
    assert "(Intel(R) Xeon(R) Processor, 2 cores; 300 s, load average 4.0 at its end)" in text
    # splicing again replaces the section
    slow = {**RESULTS, "points": [_point(100_000, 4_000.0)]}
    text = splice(report, slow).read_text()
    assert text.count("## Patterns") == 1
    assert "| 4,000 events/s at 100,000 | **missed** |" in text and "20,000" not in text


def test_the_workload_is_the_four_examples_on_random_markets() -> None:
    texts = pattern_texts(8)
    queries = [parse_query(t) for t in texts]  # every text parses
    # the four kinds in turn: NEXT, NEXT with WITHIN, FOLD, FOLD over best offers with WITHIN
    shapes = [(q.sides[0].steps[0].kind, q.sides[0].within is not None) for q in queries]  # type: ignore[union-attr]  # these texts are all pattern queries
    assert shapes == [("next", False), ("next", True), ("fold", False), ("fold", True)] * 2
    assert all("subject = 'bench.m" in t for t in texts)
    assert len(KINDS) == 4
    assert pattern_texts(8) == texts and event_stream(50) == event_stream(50)  # deterministic


def test_a_quick_run_agrees_with_the_naive_evaluator() -> None:
    # measure() exits if the set's outputs differ from the naive evaluator's at its sizes
    r = measure(quick=True)
    assert [p["patterns"] for p in r["points"]] == [100, 300]
    assert [p["patterns"] for p in r["naive"]] == [30, 100]
    assert all(p["events"] == 200 for p in r["points"])
