"""A live run's numbers as the reports print them, and its short Markdown report
(``templates/live_summary.md``); ``ops/bench`` renders its own section from the same JSON
with the same numbers (``ops.benchmarks.report.live``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ops.benchmarks.live.checks import STAGES
from ops.benchmarks.plots import live_sweep_plot
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
        # Runs from before issue 36 had no socket processes: the HTTP ones served the sockets.
        "socket_workers": str(r.get("socket_workers", 0)),
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
        "lost_frames": _lost(r),
        "reads": f"{r['reads']:,}",
        "errors": str(r["errors"]),
        "achieved_rate": f"{r['achieved_rate']:.1f}",
        "cycles": f"{c['count']:,}, mean {c['mean_ms']:.0f} ms, max {c['max_ms']:.0f} ms, "
        f"{c['mean_changes']:.1f} changes each",
        "first_errors": "\n".join(f"* `{e}`" for e in r["first_errors"]),
        "stages": stages_line(r),
        "warmup": warmup_line(r),
    }


def warmup_line(r: dict[str, Any]) -> str:
    """What ran before the measured load (``ops/bench_live.py``'s ``warm``), as a sentence."""
    w = r.get("warmup") or {"seconds": 0}
    if not w["seconds"]:
        return "The measured load began as soon as the stack answered."
    errors = f"{w['errors']} errors" if w["errors"] else "no error"
    return (
        f"Before it, {w['seconds']:g} s of the same load at {w['rate']:g} bids/s warmed the "
        f"stack just started and are not counted ({w['bids']:,} bids, {errors}; its bids "
        "stay in the book the measured runs start on)."
    )


def _lost(run: dict[str, Any]) -> str:
    """The frames of announced bids not seen; a dash for runs from before the bench
    asked (``checks.announced``)."""
    return f"{run['lost_frames']:,}" if "lost_frames" in run else "–"


def stages_line(run: dict[str, Any]) -> str:
    """Where the time to the frame went: each stage's p50 / p99 in ms (``checks.STAGES``);
    a dash for runs from before the bench measured stages."""
    split = run.get("stages_ms")
    if not split:
        return "–"
    return "; ".join(
        f"{name} {_ms(split.get(name), 'p50')} / {_ms(split.get(name), 'p99')}"
        for name, _ in STAGES
    )


def markdown(r: dict[str, Any]) -> str:
    """The result as a short report."""
    return render("live_summary.md", **values(r)).rstrip() + "\n"


def machine_line(m: dict[str, Any]) -> str:
    """``ops.benchmarks.machine.host``'s facts as the one line the live report opens with."""
    return f"{m['cores']} cores ({m['cpu']}), {m['memory_gib']:g} GiB RAM, {m['platform']}"


# Where ``ops/bench_live.py --sweep`` keeps its last table, for the full report too.
SWEEP_RESULTS = Path(__file__).resolve().parent.parent / "results" / "live-sweep.json"
SWEEP_PLOT = "img/bench-live-sweep.png"
# docs/benchmarks.md holds the sweep between these lines, so a sweep replaces only them.
SWEEP_BEGIN = "<!-- live sweep: written by ops/bench_live.py --sweep -->"
SWEEP_END = "<!-- end of the live sweep -->"
# The p99 (bid to frame) a rate of the sweep must hold (SPEC 9).
SWEEP_P99_MS = 500.0


def held(run: dict[str, Any]) -> bool:
    """Whether a rate held SPEC 9's bar: p99 to the frame within 500 ms, every bid
    acknowledged and stored, no error, and the frame of every bid that was announced seen.
    (A bid overtaken on its offer by a later one in the same cycle is never announced: its
    frame not being seen is reported, not held against the rate.)"""
    frame = run["frame_ms"]
    return (
        frame is not None
        and frame["p99"] <= SWEEP_P99_MS
        and not run["errors"]
        and run["acknowledged"] == run["stored"] == run["bids_sent"]
        and not run.get("lost_frames", 0)
    )


def sweep_results(results: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The sweep of a full run's results, else the last one ``--sweep`` wrote, else None."""
    if results and results.get("sweep"):
        return dict(results["sweep"])
    return json.loads(SWEEP_RESULTS.read_text()) if SWEEP_RESULTS.exists() else None


def sweep_rows(r: dict[str, Any]) -> list[str]:
    """The sweep's table, one row per rate."""
    rows = [
        "| offered bids/s | achieved | frame p50 / p90 / p99 ms | 201 p50 / p90 / p99 ms "
        "| cycles | changes per cycle | frames not seen (of them announced) | errors | held "
        "| stages p50 / p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in r["runs"]:
        c = run["cycles"]
        frame = " / ".join(_ms(run["frame_ms"], q) for q in ("p50", "p90", "p99"))
        ack = " / ".join(_ms(run["ack_ms"], q) for q in ("p50", "p90", "p99"))
        rows.append(
            f"| {run['rate']:g} | {run['achieved_rate']:.1f} | {frame} | {ack} "
            f"| {c['count']:,} | {c['mean_changes']:.1f} | {run['unanswered']:,} ({_lost(run)}) "
            f"| {run['errors']} "
            f"| {'yes' if held(run) else 'no'} | {stages_line(run)} |"
        )
    return rows


def sweep_markdown(r: dict[str, Any]) -> str:
    """The sweep as the section that docs/benchmarks.md holds between its markers."""
    runs = r["runs"]
    rates = [run["rate"] for run in runs if held(run)]
    return render(
        "live_sweep.md",
        command=r["command"],
        date=r["date"],
        commit=r["commit"],
        machine=r["machine"],
        offers=f"{r['offers']:,}",
        bids=f"{r['bids']:,}",
        readers=f"{r['readers']:g}",
        seconds=f"{r['seconds']:g}",
        web_workers=str(r["web_workers"]),
        socket_workers=str(r.get("socket_workers", 0)),
        loads=", ".join(f"{run['load_average'][0]:.1f}" for run in runs),
        warmup=warmup_line(r),
        table="\n".join(sweep_rows(r)),
        highest=f"{max(rates):g} bids/s" if rates else "none of the rates offered",
        plot=SWEEP_PLOT,
        verify=r["verify"],
    ).rstrip()


def splice(doc: Path, begin: str, end: str, text: str) -> None:
    """Put ``text`` into ``doc`` between the lines ``begin`` and ``end`` (at the end of the
    document the first time), leaving the rest as it is."""
    block = f"{begin}\n{text}\n{end}"
    current = doc.read_text() if doc.exists() else ""
    if begin in current and end in current:
        before, _, rest = current.partition(begin)
        _, _, after = rest.partition(end)
        current = f"{before}{block}{after}"
    else:
        current = f"{current.rstrip()}\n\n{block}\n"
    doc.write_text(current)


def sweep_into(doc: Path, r: dict[str, Any]) -> None:
    """Put sweep ``r``'s section into ``doc`` between its markers, with its plot beside
    the document."""
    splice(doc, SWEEP_BEGIN, SWEEP_END, sweep_markdown(r))
    live_sweep_plot(r, doc.parent / SWEEP_PLOT)


# docs/benchmarks.md holds ``--aged``'s section between these lines (issue 36 item 1).
AGED_BEGIN = "<!-- aged book: written by ops/bench_live.py --aged -->"
AGED_END = "<!-- end of the aged book -->"
AGED_RESULTS = SWEEP_RESULTS.parent / "live-aged.json"
AGED_TITLE = "### On a database that has been used (issue 36 item 1)"


def run_row(label: str, run: dict[str, Any]) -> str:
    """One run of a side-by-side table (``aged_rows``)."""
    frame = " / ".join(_ms(run["frame_ms"], q) for q in ("p50", "p90", "p99"))
    ack = " / ".join(_ms(run["ack_ms"], q) for q in ("p50", "p99"))
    c = run["cycles"]
    return (
        f"| {label} | {run['achieved_rate']:.1f} | {frame} | {ack} | {stages_line(run)} "
        f"| {run['acknowledged']:,} of {run['bids_sent']:,} ({run['stored']:,} stored) "
        f"| {run['unanswered']:,} ({_lost(run)}) | {run['errors']} "
        f"| {c['count']:,} ({c['mean_ms']:.0f} ms, {c['mean_changes']:.1f} changes) "
        f"| {run['load_average'][0]:.1f} | {'yes' if held(run) else 'no'} |"
    )


RUN_HEADER = [
    "| run | bids/s completed | frame p50 / p90 / p99 ms | 201 p50 / p99 ms "
    "| stages p50 / p99 ms | acknowledged (stored) | frames not seen (announced) | errors "
    "| cycles (mean, changes each) | load (1 min) | held |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
]


def mixed_line(m: dict[str, Any]) -> str:
    """What the mixed run did: each kind's requests answered as expected, of those sent."""
    kinds = ", ".join(f"{kind} {m['done'][kind]:,} of {m['sent'][kind]:,}" for kind in m["done"])
    return (
        f"{kinds}; {m['events']:,} events added to the log; {m['seconds']:,.0f} s at "
        f"{m['concurrency']} at a time; {m['errors']} errors"
    )


def aged_markdown(r: dict[str, Any]) -> str:
    """``--aged``'s section: the load on the book as built, the mixed run, the same load
    again, side by side."""
    before, after = r["before"], r["after"]
    ratio = [
        f"{after['frame_ms'][q] / before['frame_ms'][q]:.2f}"
        if before["frame_ms"] and after["frame_ms"] and before["frame_ms"][q]
        else "–"
        for q in ("p50", "p99")
    ]
    errors = "\n".join(f"* `{e}`" for e in r["mixed"]["first_errors"])
    return "\n".join(
        [
            AGED_TITLE,
            "",
            f"`{r['command']}` on {r['date']}, commit `{r['commit']}`, {r['machine']}. "
            f"{r['rate']:g} bids/s and {r['readers']:g} reads/s for {r['seconds']:g} s on "
            f"a book of {r['offers']:,} open offers and {r['bids']:,} active bids, then a "
            f"mixed run over REST ({mixed_line(r['mixed'])}), then the same load again "
            f"(the book then {r['book_after'][0]:,} open offers, {r['book_after'][1]:,} "
            f"active bids; the log {r['log_after']:,} events). Web tier: "
            f"{r['web_workers']} HTTP and {r['socket_workers']} socket processes. "
            + warmup_line(r),
            "",
            *RUN_HEADER,
            run_row("before the mixed run", before),
            run_row("after it", after),
            "",
            f"After against before, frame p50 x{ratio[0]}, p99 x{ratio[1]}. "
            f"`verify_best_offers` afterwards: {r['verify']}",
            *(["", "First errors of the mixed run:", "", errors] if errors else []),
        ]
    )


def aged_into(doc: Path, r: dict[str, Any]) -> None:
    """Put ``--aged``'s section into ``doc`` between its markers."""
    splice(doc, AGED_BEGIN, AGED_END, aged_markdown(r))
