"""``ops/bench fairness``'s section of docs/benchmarks.md: one row a run, and a second
splice replaces the first."""

from __future__ import annotations

from ops.benchmarks.fairness import TITLE, section, splice


def _run(offender: int, p50: float) -> dict[str, object]:
    q = {"p50_ms": p50, "p99_ms": 2 * p50, "max_ms": 3 * p50}
    return {
        "offender_subscriptions": offender,
        "registering_s": 10.0,
        "events": 200,
        "rate": 10.0,
        "seconds": 20.0,
        "notifications": 200,
        "frames": 199,
        "drain_s": 0.0,
        "frame": q,
        "row": {"p50_ms": None, "p99_ms": None, "max_ms": None},
        "load": 3.5,
    }


RESULT = {"date": "2026-11-28 11:22 UTC", "cpu": "Xeon", "cores": 2, "alone": _run(0, 40.0)}
RESULT["offender"] = _run(100, 900.0)


def test_the_section_has_a_row_for_each_run():
    text = section(RESULT)

    assert text.startswith(TITLE + " (issue 37)\n")
    assert (
        "| alone | 0 | 200 | 199 (200) | 40.0 / 80.0 / 120.0 | None / None / None | 3.5 |" in text
    )
    assert "| offender | 100 | 200 | 199 (200) | 900.0 / 1800.0 / 2700.0 |" in text


def test_splicing_twice_keeps_one_section(tmp_path):
    report = tmp_path / "benchmarks.md"
    report.write_text("# Benchmarks\n\n## Method\n\ntext\n")

    splice(report, RESULT)
    splice(report, RESULT)

    assert report.read_text() == "# Benchmarks\n\n## Method\n\ntext\n\n" + section(RESULT) + "\n"
