"""The patterns section (``ops/benchmarks/patterns.py``'s results under ``patterns``), its
plot, and its splice into an existing report when the benchmark runs alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ops.benchmarks.patterns import FACTOR, RATE

from . import fmt
from .doc import Doc, splice_section
from .index import cost_plot, lead_cells, naive_cells, run_facts, verdict

TITLE = "## Patterns: many form 3 subscriptions in one process"
PLOT = "img/bench-patterns.png"


def patterns(doc: Doc) -> None:
    r = doc.results.get("patterns")
    if not r:
        return
    top = r["points"][-1]
    naive = naive_cells(r, "patterns")
    rows = [
        fmt.row(
            [
                *lead_cells(p, "patterns"),
                f"{p['sources_per_event']:,.1f}",
                f"{p['instances_touched_per_event']:,.1f}",
                f"{p['outputs_per_event']:,.2f}",
                f"{p['instances_held']:,}",
                f"{p['bytes_per_pattern']:,.0f}",
                fmt.s(p["build_cpu_s"]),
                naive(p),
                f"{p['speedup']:,.0f}×",
            ]
        )
        for p in r["points"]
    ]
    full = top["patterns"] >= 100_000
    doc.prose(
        "patterns",
        **run_facts(r, "patterns", "--patterns-only"),
        markets=f"{r['markets']:,}",
        warm=f"{r['warm_events']:,}",
        rate_verdict=_verdict(top["events_per_s"] >= RATE, full),
        speedup=f"{top['speedup']:,.0f}×",
        speedup_verdict=_verdict(top["speedup"] >= FACTOR, full),
        rows="\n".join(rows),
        naive_per_pattern=f"{r['naive_us_per_pattern']:.1f}",
        exponent=f"{r['exponent']:.2f}",
        plot=PLOT,
    )


def _verdict(met: bool, full: bool) -> str:
    return verdict(met, full, "100,000")


def plot(results: dict[str, Any], path: Path) -> bool:
    r = results.get("patterns")
    if not r:
        return False
    cost_plot(
        path,
        r,
        "patterns",
        labels=("multi.py", "naive evaluator, extrapolated (linear)"),
        axes=("live patterns", "Patterns"),
    )
    return True


def splice(report: Path, results: dict[str, Any]) -> Path:
    """Put the section into ``report`` (see ``splice_section``)."""
    doc = Doc({"patterns": results})
    patterns(doc)
    return splice_section(report, TITLE, doc.text())
