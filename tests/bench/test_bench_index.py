"""The matching-index benchmark's report section: what it says of a run, and how it is put
into an existing report (replacing its previous version, never duplicating it)."""

from __future__ import annotations

from pathlib import Path

from ops.benchmarks.report.index import splice


def _point(n: int, rate: float) -> dict[str, float]:
    return {
        "subscriptions": n,
        "events": 1000,
        "cpu_s": 1000 / rate,
        "wall_s": 2000 / rate,
        "events_per_s": rate,
        "us_per_event": 1e6 / rate,
        "visited_per_event": 12.0,
        "matches_per_event": 0.5,
        "nodes": 3 * n,
        "bytes_per_subscription": 900.0,
        "build_cpu_s": n / 1e5,
        "naive_us_per_event_extrapolated": n / 9,
    }


RESULTS = {
    "quick": False,
    "order": ["type", "offer", "price"],
    "points": [_point(10_000, 60_000.0), _point(1_000_000, 25_000.0)],
    "naive": [{"subscriptions": 10_000, "events": 200, "cpu_s": 0.2, "wall_s": 0.3,
               "us_per_event": 1000.0}],
    "exponent": 0.19,
    "naive_exponent": 1.0,
    "seconds": 120.0,
    "load": 3.0,
    "date": "2026-11-24 03:00 UTC",
    "cpu": "AMD EPYC",
    "cores": 2,
}  # fmt: skip


def test_section_reports_the_targets_and_marks_extrapolated_naive_costs(tmp_path: Path) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text(
        "# Benchmarks\n\n## Sustained load\n\nx\n\n## Where the missed targets\n\ny\n"
    )
    text = splice(report, RESULTS).read_text()
    assert text.index("## Sustained load") < text.index("## The matching index")
    assert text.index("## The matching index") < text.index("## Where the missed targets")
    assert "| 25,000 events/s at 1,000,000 | **met** |" in text
    assert "| 0.19 (naive loop 1.00) | **met** |" in text
    assert "| 10,000 | 60,000 |" in text and "| 1,000 |\n" in text  # measured, not the fit
    assert "| 111,111 (extrapolated) |" in text
    assert "from 1.39 µs at 10,000 subscriptions to 3.33 µs at 1,000,000" in text
    assert "on 2026-11-24 03:00 UTC (AMD EPYC, 2 cores; 120 s, load average 3.0 at its end)" in text


def test_a_run_recorded_before_the_processor_was_says_so(tmp_path: Path) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n")
    older = {k: v for k, v in RESULTS.items() if k not in ("cpu", "cores")}
    text = splice(report, older).read_text()
    assert "on 2026-11-24 03:00 UTC (processor not recorded; 120 s, load average 3.0" in text


def test_splicing_again_replaces_the_section(tmp_path: Path) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Method\n\nz\n")
    splice(report, RESULTS)
    slower = {**RESULTS, "exponent": 0.7, "points": [_point(10_000, 9_000.0)], "quick": True}
    text = splice(report, slower).read_text()
    assert text.count("## The matching index") == 1
    assert "| 0.70 (naive loop 1.00) | not measured at 1,000,000 (a quick run) |" in text
    assert "## Method\n\nz\n" in text and "60,000" not in text
