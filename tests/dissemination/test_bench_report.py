"""The dissemination benchmark's section of docs/benchmarks.md: the SPEC 9 verdict and the
splice that replaces the section and leaves the rest of the report as it was."""

from __future__ import annotations

from ops.benchmarks.dissemination import _median_records
from ops.benchmarks.report.dissemination import PLOT, TITLE, plot, splice


def results(totals: dict[str, dict[str, float]]) -> dict:
    def run(total: float) -> dict:
        return {"messages": 4, "bytes": 500, "watches": 10, "producer_ms": 1.0,
                "delivery_ms": 2.0, "total_s": total, "choices": {"reformulate": 2},
                "load_before": 1.0, "load_after": 1.5}  # fmt: skip

    return {
        "quick": True, "date": "2026-11-24 06:00 UTC", "commit": "abc", "cpu": "CPU",
        "cores": 2, "size": {"watches": 400},
        "workloads": [
            {"workload": name, "watches": 400, "offers": 100, "changes": 12, "consumers": 4,
             "registration_s": 1.0, "runs": {k: run(v) for k, v in t.items()}}
            for name, t in totals.items()
        ],
    }  # fmt: skip


MARKER = "<!-- request costs: written by ops/bench_live.py --request-costs -->"


def test_the_verdict_and_the_splice(tmp_path):
    report = tmp_path / "benchmarks.md"
    report.write_text(
        f"# Benchmarks\n\n## Before\n\nkept\n\n{TITLE}\n\nold\n\n{MARKER}\n## After\n\nkept too\n"
    )
    splice(report, results({
        "few": {"enumerate": 1.0, "relax": 3.0, "reformulate": 2.0, "optimizer": 1.1},
        "mix": {"enumerate": 2.0, "relax": 3.0, "reformulate": 2.0, "optimizer": 2.0},
    }))  # fmt: skip
    text = report.read_text()
    assert text.startswith("# Benchmarks\n\n## Before\n\nkept\n\n" + TITLE)
    # the marker of a part another command writes stays before the next section
    assert text.endswith(f"\n\n{MARKER}\n## After\n\nkept too\n")
    assert "old" not in text and text.count(TITLE) == 1
    assert "best fixed: enumerate; optimizer / best = 1.10: met." in text
    # on the mix the optimizer must beat every fixed strategy, not tie the best
    assert "best fixed: enumerate; optimizer / best = 1.00: missed." in text
    assert "This run held 400 watches, not SPEC 9's 100,000" in text
    assert "| optimizer | 4 | 500 | 10 | 1.00 | 2.00 | 1.10 | reformulate 2 | 1.0 / 1.5 |" in text


def test_each_change_counts_with_its_median_round():
    def rec(delivery, choice):
        return {"delivery_s": delivery, "choice": choice}

    rounds = [
        [rec(0.9, "a"), rec(0.1, "a")],
        [rec(0.2, "b"), rec(5.0, "b")],  # a spike on the second change
        [rec(0.3, "c"), rec(0.2, "c")],
    ]
    assert _median_records(rounds) == [rec(0.3, "c"), rec(0.2, "c")]
    # an even count takes the lower middle; one round is itself
    assert _median_records(rounds[:2]) == [rec(0.2, "b"), rec(0.1, "a")]
    assert _median_records(rounds[:1]) == rounds[0]


def test_the_plot_is_a_png_with_a_bar_group_per_workload(tmp_path):
    r = results({
        "few": {"enumerate": 1.0, "relax": 3.0, "reformulate": 2.0, "optimizer": 1.1},
        "mix": {"enumerate": 2.0, "relax": 3.0, "reformulate": 2.0, "optimizer": 2.0},
    })  # fmt: skip
    path = tmp_path / PLOT
    assert plot({"dissemination": r}, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plot({}, tmp_path / "none.png") and not (tmp_path / "none.png").exists()
