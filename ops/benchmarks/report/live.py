"""The end-to-end runs of ``ops/bench_live.py`` (their JSON), and why a live target was missed.

The per-request costs that explain a miss are not measured by the run itself: they come from
profiling outside the run, written down in ``ops/benchmarks/results/live-profile.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ops.benchmarks.live.report import SWEEP_BEGIN, SWEEP_END, sweep_markdown, sweep_results, values

from .doc import Doc

PROFILE = Path(__file__).resolve().parent.parent / "results" / "live-profile.json"


# The sections of the end-to-end runs: the results' key of each, and its title.
SECTIONS = (
    ("live", "End to end: a bid over REST to its best-offer frame (SPEC 9)"),
    ("load", "Sustained load: the rate the stack holds with no error and no lost order"),
)


def live(doc: Doc) -> None:
    for key, title in SECTIONS:
        if doc.results.get(key):
            section(doc, doc.results[key], title)
    sweep = sweep_results(doc.results)
    if sweep:
        doc.add(SWEEP_BEGIN, sweep_markdown(sweep), SWEEP_END, "")


def section(doc: Doc, r: dict[str, Any], title: str) -> None:
    doc.prose("live", title=title, **values(r))
    if r["first_errors"]:
        doc.add("First errors:", "", *[f"* `{e}`" for e in r["first_errors"]], "")


def profile() -> dict[str, Any] | None:
    """The profiled per-request costs, if they were written down."""
    return json.loads(PROFILE.read_text()) if PROFILE.exists() else None


def why_live(doc: Doc, r: dict[str, Any]) -> str:
    f, a, c = r["frame_ms"], r["ack_ms"] or {}, r["cycles"]
    if r["achieved_rate"] < 0.9 * r["rate"]:
        p = profile()
        request_cost = cycle_cost = ""
        if p:
            low, high = p["request_cpu_ms"]
            request_cost = f" (about {low}-{high} ms of CPU)"
            cycle_cost = (
                f" (about {p['cycle_statements']} statements through the ORM, "
                f"{p['cycle_idle_ms']} ms on an idle machine; these per-request figures come "
                "from profiling outside the run)"
            )
        rest = doc.fragment(
            "why_live_capacity",
            achieved_rate=f"{r['achieved_rate']:.1f}",
            rate=f"{r['rate']:g}",
            request_cost=request_cost,
            cycle_cost=cycle_cost,
        )
    else:
        rest = doc.fragment("why_live_kept_up")
    return doc.fragment(
        "why_live",
        rate=f"{r['rate']:g}",
        ack_p50=f"{a.get('p50', 0):,.0f}",
        frame_p50=f"{f['p50']:,.0f}",
        cycle_ms=f"{c['mean_ms']:.0f}",
        cycle_changes=f"{c['mean_changes']:.1f}",
        rest=rest,
    )
