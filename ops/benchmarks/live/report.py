"""A live run's numbers as the reports print them, and its short Markdown report
(``templates/live_summary.md``); ``ops/bench`` renders its own section from the same JSON
with the same numbers (``ops.benchmarks.report.live``)."""

from __future__ import annotations

from typing import Any

from ops.benchmarks.templates import render

QUANTILES = ("p50", "p90", "p99", "max")


def _ms(values: dict[str, float] | None, q: str) -> str:
    return f"{values[q]:,.0f}" if values and q in values else "–"


def values(r: dict[str, Any]) -> dict[str, str]:
    """Every number of summary ``r`` formatted, under the names the templates use."""
    c = r["cycles"]
    return {
        **{key: str(r[key]) for key in ("command", "date", "commit", "machine", "verify")},
        "load": f"{r['load_average'][0]:.1f}",
        "offers": f"{r['offers']:,}",
        "bids": f"{r['bids']:,}",
        "web_workers": str(r["web_workers"]),
        "rate": f"{r['rate']:g}",
        "readers": f"{r['readers']:g}",
        "seconds": f"{r['seconds']:g}",
        **{f"frame_{q}": _ms(r["frame_ms"], q) for q in QUANTILES},
        **{f"ack_{q}": _ms(r["ack_ms"], q) for q in QUANTILES},
        "bids_sent": f"{r['bids_sent']:,}",
        "acknowledged": f"{r['acknowledged']:,}",
        "stored": f"{r['stored']:,}",
        "frames": f"{r['frames']:,}",
        "unanswered": f"{r['unanswered']:,}",
        "reads": f"{r['reads']:,}",
        "errors": str(r["errors"]),
        "achieved_rate": f"{r['achieved_rate']:.1f}",
        "cycles": f"{c['count']:,}, mean {c['mean_ms']:.0f} ms, max {c['max_ms']:.0f} ms, "
        f"{c['mean_changes']:.1f} changes each",
        "first_errors": "\n".join(f"* `{e}`" for e in r["first_errors"]),
    }


def markdown(r: dict[str, Any]) -> str:
    """The result as a short report."""
    return render("live_summary.md", **values(r)).rstrip() + "\n"


def machine_line(m: dict[str, Any]) -> str:
    """``ops.benchmarks.machine.host``'s facts as the one line the live report opens with."""
    return f"{m['cores']} cores ({m['cpu']}), {m['memory_gib']:g} GiB RAM, {m['platform']}"
