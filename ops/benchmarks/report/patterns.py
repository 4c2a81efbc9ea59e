"""The patterns section (``ops/benchmarks/patterns.py``'s results under ``patterns``), its
plot, and its splice into an existing report when the benchmark runs alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ops.benchmarks.patterns import FACTOR, RATE

from .doc import Doc, splice_section
from .index import cost_plot, growth_rows, run_facts, verdict

# The table's own columns, between the lead cells and the build CPU: (key, format).
COLUMNS = (
    ("sources_per_event", ",.1f"),
    ("instances_touched_per_event", ",.1f"),
    ("outputs_per_event", ",.2f"),
    ("instances_held", ","),
    ("bytes_per_pattern", ",.0f"),
    ("full_collections", ","),
)

TITLE = "## Patterns: many form 3 subscriptions in one process"
PLOT = "img/bench-patterns.png"


def patterns(doc: Doc) -> None:
    r = doc.results.get("patterns")
    if not r:
        return
    top = r["points"][-1]
    full = top["patterns"] >= 100_000
    doc.prose(
        "patterns",
        **run_facts(r, "patterns", "--patterns-only"),
        markets=f"{r['markets']:,}",
        warm=f"{r['warm_events']:,}",
        rate_verdict=_verdict(top["events_per_s"] >= RATE, full),
        speedup=f"{top['speedup']:,.0f}×",
        speedup_verdict=_verdict(top["speedup"] >= FACTOR, full),
        rows=growth_rows(r, "patterns", COLUMNS, last=lambda p: [f"{p['speedup']:,.0f}×"]),
        naive_per_pattern=f"{r['naive_us_per_pattern']:.1f}",
        exponent=f"{r['exponent']:.2f}",
        plot=PLOT,
    )


def _verdict(met: bool, full: bool) -> str:
    return verdict(met, full, "100,000")


LABELS = ("multi.py", "naive evaluator, extrapolated (linear)")
AXES = ("live patterns", "Patterns")


def plot(results: dict[str, Any], path: Path) -> bool:
    return cost_plot(path, results.get("patterns"), "patterns", LABELS, AXES)


def splice(report: Path, results: dict[str, Any]) -> Path:
    """Put the section into ``report`` (see ``splice_section``)."""
    doc = Doc({"patterns": results})
    patterns(doc)
    return splice_section(report, TITLE, doc.text())
