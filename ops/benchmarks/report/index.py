"""The matching-index section (``ops/benchmarks/index.py``'s results under ``index``), its
plot, and the splice that puts the section into an existing report when the index
benchmark runs alone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ops.benchmarks.plots import _pyplot

from . import fmt
from .doc import Doc, splice_section

# The table's own columns, between the lead cells and the build CPU: (key, format).
COLUMNS = (
    ("visited_per_event", ",.1f"),
    ("matches_per_event", ",.2f"),
    ("nodes", ","),
    ("bytes_per_subscription", ",.0f"),
)

TITLE = "## The matching index"
RATE = 20_000
EXPONENT = 0.5


def index(doc: Doc) -> None:
    r = doc.results.get("index")
    if not r:
        return
    points, top = r["points"], r["points"][-1]
    full = top["subscriptions"] >= 1_000_000
    doc.prose(
        "index",
        **run_facts(r, "subscriptions", "--index-only"),
        low=f"{points[0]['subscriptions']:,}",
        rate_verdict=_verdict(top["events_per_s"] >= RATE, full),
        exponent=f"{r['exponent']:.2f}",
        naive_exponent=f"{r['naive_exponent']:.2f}",
        exponent_verdict=_verdict(r["exponent"] <= EXPONENT, full),
        rows=growth_rows(r, "subscriptions", COLUMNS),
        per_node_low=f"{points[0]['us_per_event'] / points[0]['visited_per_event']:.2f}",
        per_node_top=f"{top['us_per_event'] / top['visited_per_event']:.2f}",
    )


# What the sections of the benchmarks that grow one size against a naive loop (this one and
# patterns.py's) share: a run's facts in the prose, and the first and naive cells of a row.


def run_facts(r: dict[str, Any], size: str, flag: str) -> dict[str, str]:
    """The prose values about run ``r`` of the benchmark that ``ops/bench flag`` runs, whose
    points grow ``size``: how it was run, its largest point and the naive loop's points."""
    top, naive = r["points"][-1], r["naive"]
    return {
        "command": f"ops/bench {flag}" + (" --quick" if r["quick"] else ""),
        "date": r["date"],
        # (results of runs before the processor was recorded say so)
        "machine": f"{r['cpu']}, {r['cores']} cores" if "cpu" in r else "processor not recorded",
        "seconds": f"{r['seconds']:,.0f}",
        "load": f"{r['load']:.1f}",
        "order": ", ".join(f"`{a}`" for a in r["order"]),
        "events": f"{top['events']:,}",
        "top_rate": fmt.rate(top["events_per_s"]),
        "top_size": f"{top[size]:,}",
        "naive_sizes": ", ".join(f"{p[size]:,}" for p in naive),
        "naive_events": f"{naive[0]['events']:,}",
        "naive_costs": ", ".join(f"{p['us_per_event']:,.0f}" for p in naive),
    }


def growth_rows(
    r: dict[str, Any],
    size: str,
    columns: Sequence[tuple[str, str]],
    last: Callable[[dict[str, Any]], list[str]] = lambda p: [],
) -> str:
    """The table of run ``r``, a row a point: its lead cells, then ``columns`` (each a key
    of the point and its format), the build CPU, the naive loop's cost, and ``last``'s cells."""
    naive = naive_cells(r, size)
    rows = [
        fmt.row(
            [
                *lead_cells(p, size),
                *(format(p[key], spec) for key, spec in columns),
                fmt.s(p["build_cpu_s"]),
                naive(p),
                *last(p),
            ]
        )
        for p in r["points"]
    ]
    return "\n".join(rows)


def lead_cells(p: dict[str, Any], size: str) -> list[str]:
    """A point's first cells: its size, events per second, CPU and wall µs per event."""
    return [
        f"{p[size]:,}",
        fmt.rate(p["events_per_s"]),
        f"{p['us_per_event']:,.1f}",
        f"{1e6 * p['wall_s'] / p['events']:,.1f}",
    ]


def naive_cells(r: dict[str, Any], size: str) -> Callable[[dict[str, Any]], str]:
    """The naive loop's cost per event at a point of ``r``: measured where it was measured,
    else extrapolated (and said so)."""
    measured = {p[size]: p["us_per_event"] for p in r["naive"]}

    def cell(p: dict[str, Any]) -> str:
        if p[size] in measured:
            return f"{measured[p[size]]:,.0f}"
        return f"{p['naive_us_per_event_extrapolated']:,.0f} (extrapolated)"

    return cell


def _verdict(met: bool, full: bool) -> str:
    return verdict(met, full, "1,000,000")


def verdict(met: bool, full: bool, size: str) -> str:
    """A target's verdict, or why a quick run gives none."""
    if not full:
        return f"not measured at {size} (a quick run)"
    return "**met**" if met else "**missed**"


LABELS = ("matching tree", "naive loop, extrapolated (exponent {naive_exponent:.2f})")
AXES = ("stateless subscriptions", "Matching index")


def plot(results: dict[str, Any], path: Path) -> bool:
    return cost_plot(path, results.get("index"), "subscriptions", LABELS, AXES)


def cost_plot(
    path: Path, r: dict[str, Any] | None, size: str, labels: tuple[str, str], axes: tuple[str, str]
) -> bool:
    """CPU time per event against size (``r["points"]``, keyed by ``size``), log-log, the
    naive side measured (``r["naive"]``) and extrapolated beside it; False, and no plot,
    without results. ``labels``: the measured line's and the extrapolation's (a format
    string over ``r``'s values); ``axes``: the x label and the title's start."""
    if not r:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sizes = [p[size] for p in r["points"]]
    ax.loglog(sizes, [p["us_per_event"] for p in r["points"]], "o-", label=labels[0])
    ax.loglog(
        sizes,
        [p["naive_us_per_event_extrapolated"] for p in r["points"]],
        ":",
        color="#c0504d",
        label=labels[1].format(**r),
    )
    ax.loglog(
        [p[size] for p in r["naive"]],
        [p["us_per_event"] for p in r["naive"]],
        "s",
        color="#c0504d",
        label="naive, measured",
    )
    ax.set_xlabel(axes[0])
    ax.set_ylabel("CPU µs per event")
    ax.set_title(f"{axes[1]}: cost per event (exponent {r['exponent']:.2f})")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def splice(report: Path, results: dict[str, Any]) -> Path:
    """Put the section into ``report`` (a whole run's ``benchmarks.md``; see
    ``splice_section``)."""
    doc = Doc({"index": results})
    index(doc)
    return splice_section(report, TITLE, doc.text())
