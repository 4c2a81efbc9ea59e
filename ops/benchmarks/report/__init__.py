"""The Markdown report of a run: targets, Figures 4 to 7 beside the paper, the Spark batch
matcher beside ``range``, the live runs, the matching index, the patterns, plans, method. Each section is a function of a
:class:`Doc` in its own module; the prose is in ``ops/benchmarks/templates/report/``, every
number comes from the run's results (or, for the paper, ``ops/benchmarks/paper.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ops.benchmarks.live.report import SWEEP_PLOT, sweep_results
from ops.benchmarks.plots import live_sweep_plot, plot_all

from .doc import Doc
from .figures import correctness, figure4, figure5, figure6_7, plans
from .header import header, method
from .index import index
from .index import plot as plot_index
from .live import live
from .patterns import PLOT as PATTERNS_PLOT
from .patterns import patterns
from .patterns import plot as plot_patterns
from .spark import spark
from .targets import misses_explained, targets

SECTIONS = (
    header,
    targets,
    correctness,
    figure4,
    figure5,
    figure6_7,
    spark,
    live,
    index,
    patterns,
    misses_explained,
    plans,
    method,
)


def render(results: dict[str, Any]) -> str:
    doc = Doc(results)
    for section in SECTIONS:
        section(doc)
    return doc.text()


def write_report(results: dict[str, Any], out: Path, *, plots: bool = True) -> Path:
    """``out/benchmarks.md``, and with ``plots`` the PNGs it shows (under ``out``)."""
    if plots:
        plot_all(results, out / "img")
        sweep = sweep_results(results)
        if sweep:
            live_sweep_plot(sweep, out / SWEEP_PLOT)
        plot_index(results, out / "img" / "bench-index.png")
        plot_patterns(results, out / PATTERNS_PLOT)
    path = out / "benchmarks.md"
    path.write_text(render(results))
    return path
