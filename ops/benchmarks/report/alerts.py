"""The alerts section (``ops/benchmarks/alerts.py``'s results under ``alerts``), its plot,
and its splice into an existing report: it takes the place of the live-subscriptions
section of the retired advance pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ops.benchmarks.live.report import splice as splice_marked
from ops.benchmarks.live.report import stages_line

from .doc import splice_section

TITLE = "## Alerts: live subscriptions on two engine processes (SPEC 9, issue 35)"
# The section this one replaces (the advance pass's figures, retired with it).
REPLACED = "## Live subscriptions: many on one market (SPEC 8.3, issue 19)"
PLOT = "img/bench-alerts.png"
# A run replaces only what stands between these lines (``block``).
BEGIN = "<!-- alerts table: written by ops/bench alerts -->"
END = "<!-- end of the alerts table -->"
# Frames a run's frame delays are plotted from at least.
MIN_FRAMES = 50
# The measurements before this work (issue 35 item 7): the engine as it was, kept beside
# the new figures.
BEFORE = Path(__file__).resolve().parents[1] / "results" / "alerts-before.json"


def _q(part: dict[str, Any]) -> str:
    if part.get("p50_ms") is None:
        return "none"
    return f"{part['p50_ms']:,.0f} / {part['p99_ms']:,.0f} / {part['max_ms']:,.0f}"


def _load(run: dict[str, Any]) -> str:
    return f"{run['load_start'][0]:.1f} / {run['load_run'][0]:.1f}"


def table(runs: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| live subscriptions | registered (bulk), per s | first 10,000, s | events appended "
        "(a second) | notifications a second | event to `sub:` frame, ms p50 / p99 / max "
        "(frames) | event to notification row, ms p50 / p99 / max | lag, events: max / last "
        "| drain, s | engines' CPU while appended, s each | memory per subscription, KB "
        "| load (1 min): start / run |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        if "failed" in r:
            rows.append(f"| {r['subscriptions']:,} | failed: see the raw results |" + " |" * 10)
            continue
        bar = f"{r['first_10000_s']:.1f}" if r["subscriptions"] >= 10_000 else "-"
        cpu = " + ".join(f"{c:.0f}" for c in r["engine_cpu_s"]) if "engine_cpu_s" in r else "-"
        rows.append(
            f"| {r['subscriptions']:,} | {r['registering_per_s']:,} | {bar} | "
            f"{r['events']:,} ({r['events'] / r['seconds']:.0f}) | "
            f"{r['notifications_per_s']:,} | {_q(r['frame'])} ({r['frames']:,}) | "
            f"{_q(r['row'])} | {r['lag_max']:,} / {r['lag_last']:,} | {r['drain_s']} | "
            f"{cpu} | {r['rss_kb_per_subscription']:.1f} | {_load(r)} |"
        )
    return rows


def _profile(lines: list[str] | None, heading: str) -> list[str]:
    if not lines:
        return []
    return [heading, "", "```", *lines, "```", ""]


def block(r: dict[str, Any]) -> str:
    """What a run writes of the section: how it ran, the plot, the table, and its engines'
    profile when it took one. It stands between ``BEGIN`` and ``END``; the notes around it
    are the report's own and stay (``splice``)."""
    runs = r["runs"]
    out = [
        f"`ops/bench alerts`, {r['date']}, commit {r['commit']}, {r['cpu']} ({r['cores']} "
        "cores), on loopback; the load average beside each run says how busy the machine "
        "was (2 means both cores busy; this run's own stack is seven processes). Each size: "
        "a fresh bench database and its own stack (uvicorn, Celery's matching and tasks "
        "workers and beat, and two `manage.py subscription_engine` processes sharing the "
        "partitions); the subscriptions (70% form 1 `SELECT price WHERE type = 'trade', "
        "subject = S, price > P`, 20% form 3 `TRADES AS a NEXT{b.price > 1.0k * a.price} "
        "TRADES AS b WITHIN 10m`, 10% form 4 `SELECT MIN(ask) FROM offers WHERE subject = "
        "S`, over 100 subjects) registered in bulk through the service "
        "(`subscriptions_create_many`, 100 a user); once both engines held every one and had "
        "caught up, trades appended on random subjects of the 100 at "
        f"{_rate(runs)} a second for {_seconds(runs)} s (when the appender fell behind, the "
        "trades due went in one transaction). Frame delays are "
        "from the event's log time to the frame's arrival at a client following 40 of the "
        "first owner's form 1 subscriptions on one WebSocket; row delays, to the commit of "
        "every notification's row. Lag is the larger of the two engines' heartbeats, read "
        "each second. Memory: the two engines' resident memory once they held every "
        "subscription, less theirs before any existed. The method is in "
        "`ops/benchmarks/alerts.py`; a run writes its raw results to "
        "`test-artifacts/bench/alerts.json`.",
        "",
        f"![latency against live subscriptions]({PLOT})",
        "",
        *table(runs),
    ]
    profile = _profile(
        r.get("profile"),
        "Where the engines' time went (py-spy at 50 Hz on the engine processes while the "
        "trades were appended; share of its samples, inclusive):",
    )
    if profile:
        out += ["", *profile[:-1]]
    return "\n".join(out)


def _rate(runs: list[dict[str, Any]]) -> str:
    rates = sorted({f"{x['rate']:g}" for x in runs if "failed" not in x})
    return " / ".join(rates) or "–"


def _seconds(runs: list[dict[str, Any]]) -> str:
    spans = sorted({f"{x['seconds']:g}" for x in runs if "failed" not in x})
    return " / ".join(spans) or "–"


def section(r: dict[str, Any]) -> str:
    """The whole section, for a report that has none yet: the title, the run's block
    between its markers, and what the engine measured before this work."""
    runs = r["runs"]
    ok = [x for x in runs if "failed" not in x]
    before = json.loads(BEFORE.read_text()) if BEFORE.exists() else None
    out = [TITLE, "", BEGIN, block(r), END, ""]
    if before:
        out += [
            "**Before** (the engine as issue 35 items 1-6 left it, "
            f"{before['date']}, {before['cpu']}, load {before['load']}): "
            f"`{before['command']}`: {before['summary']}",
            "",
        ]
    out += _profile(
        before.get("profile") if before else None,
        "Where one engine process's time went before (py-spy on it while it was timed, "
        "10,000 subscriptions; share of its samples, inclusive):",
    )
    if r.get("notes"):
        out += [r["notes"], ""]
    if ok:
        top = ok[-1]
        out += [
            f"The largest size run: {top['subscriptions']:,} (the spec's bar is 100,000).",
            "",
        ]
    return "\n".join(out)


def plot(results: dict[str, Any], path: Path) -> None:
    """Latency to the frame and to the row (p50, p99) against the live subscriptions."""
    runs = [x for x in results["alerts"]["runs"] if "failed" not in x and x["frame"]["p50_ms"]]
    if not runs:
        return
    # pyplot only when a plot is drawn (slow to import)
    from ops.benchmarks.plots import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for part, label in (("frame", "event to `sub:` frame"), ("row", "event to row")):
        # a frame figure of a few frames (the rest not come by the end) is left out
        shown = [x for x in runs if part == "row" or x["frames"] >= MIN_FRAMES]
        xs = [x["subscriptions"] for x in shown]
        for q, style in (("p50_ms", "o-"), ("p99_ms", "^-")):
            ax.plot(xs, [x[part][q] for x in shown], style, label=f"{label}, {q[:3]}")
    ax.axhline(50, color="#4f81bd", linestyle=":", label="SPEC 9: p50 50 ms")
    ax.axhline(250, color="#c0504d", linestyle=":", label="SPEC 9: p99 250 ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("live subscriptions (two engine processes, 50 trades/s)")
    ax.set_ylabel("ms (log)")
    a = results["alerts"]
    ax.set_title(f"{a['cpu']} ({a['cores']} cores), load beside each run", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def splice(report: Path, results: dict[str, Any]) -> Path:
    """Put the run into ``report``: only its block between ``BEGIN`` and ``END`` where the
    report has them (the notes written around it stay); else the whole section, in place
    of the advance pass's section where that is still there."""
    text = report.read_text() if report.exists() else ""
    if BEGIN in text and END in text:
        splice_marked(report, BEGIN, END, block(results))
        return report
    title = REPLACED if REPLACED in text and TITLE not in text else TITLE
    return splice_section(report, title, section(results))


# ``ops/benchmarks/alerts.py --bid-path`` keeps its subsection between these lines.
BID_PATH_BEGIN = "<!-- bid path with alerts: written by ops/benchmarks/alerts.py --bid-path -->"
BID_PATH_END = "<!-- end of the bid path with alerts -->"
BID_PATH_TITLE = "### The bid path with and without live subscriptions (SPEC 9, issue 35 item 7)"
# How much the bid path's p50 and p99 may worsen with the subscriptions (issue 35 item 7).
BID_PATH_BAR = 1.10


def _pair(spread: dict[str, float] | None) -> str:
    if not spread:
        return "– / –"
    return f"{spread['p50']:,.0f} / {spread['p99']:,.0f}"


def ratios(r: dict[str, Any]) -> dict[str, float | None]:
    """The bid path with the subscriptions over without: frame and 201, p50 and p99."""
    out: dict[str, float | None] = {}
    for part in ("frame_ms", "ack_ms"):
        for q in ("p50", "p99"):
            a, b = r["without"][part], r["with"][part]
            key = f"{part[:-3]}_{q}"
            out[key] = b[q] / a[q] if a and b and a[q] else None
    return out


def carried(x: dict[str, Any]) -> bool:
    """Whether a run of the bid load carried it: no error, and at least 90% of the offered
    rate completed (``report/live.py``'s test of a rate held)."""
    return not x["errors"] and x["achieved_rate"] >= 0.9 * x["rate"]


def bid_path_section(r: dict[str, Any]) -> str:
    """``--bid-path``'s subsection: the bid path without and with the subscriptions, the
    ratios against issue 35's 10%, and the alerts' own delays in the second run."""
    rows = [
        "| run | live subscriptions | bids/s completed | bid to `best_offer` frame p50 / p99 ms "
        "| 201 p50 / p99 ms | stages p50 / p99 ms | acknowledged (stored) | errors "
        "| load (1 min) |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for key, count in (("without", 0), ("with", r["registered"])):
        x = r[key]
        rows.append(
            f"| {key} | {count:,} | {x['achieved_rate']:.1f} | {_pair(x['frame_ms'])} "
            f"| {_pair(x['ack_ms'])} | {stages_line(x)} | {x['acknowledged']:,} "
            f"({x['stored']:,}) | {x['errors']} | {x['load_average'][0]:.1f} |"
        )
    q = ratios(r)
    shown = {k: f"x{v:.2f}" if v is not None else "–" for k, v in q.items()}
    rows.append(
        f"| with / without | | | {shown['frame_p50']} / {shown['frame_p99']} "
        f"| {shown['ack_p50']} / {shown['ack_p99']} | | | | |"
    )
    held = all(v is not None and v <= BID_PATH_BAR for v in q.values())
    failed = [key for key in ("without", "with") if not carried(r[key])]
    verdict = (
        f"**not comparable**: the run{'s' if len(failed) > 1 else ''} "
        f"{' and '.join(failed)} did not carry the load (errors, or under 90% of the "
        "offered rate completed), so the ratios measure the machine, not the subscriptions"
        if failed
        else f"**{'held' if held else 'missed'}**"
    )
    a = r["alerts"]
    cpu = " + ".join(f"{c:.0f}" for c in a["engine_cpu_s"])
    return "\n".join(
        [
            BID_PATH_TITLE,
            "",
            f"`{r['command']}`, {r['date']}, commit {r['commit']}, {r['cpu']} ({r['cores']} "
            f"cores), on loopback. SPEC 9's bid load (`ops/bench_live.py`'s: {r['rate']:g} "
            f"bids/s and {r['readers']:g} reads/s for {r['seconds']:g} s, on a book of "
            f"{r['offers']:,} open offers and {r['bids']:,} active bids, its "
            f"{r['offers_logged']:,} offers put into the log as `offer_posted` so that "
            "watches know them) on one stack (web tier of "
            f"{r['web_workers']} HTTP and {r['socket_workers']} socket processes, the "
            f"workers, beat, {r['engines']} `subscription_engine` processes), first without "
            f"subscriptions, then with {r['registered']:,} registered in bulk "
            f"({r['registering_s']:,.1f} s; the engines held them all "
            f"{r['joined_s']:,.1f} s later): 70% form 1 on an offer range's `best_offer` "
            "events, 20% form 3 on two of them, 10% form 4 `MAX(best_value)` over the range, "
            f"the book's offers in 100 ranges (`alerts.py`'s `bid_path_query`).",
            "",
            *rows,
            "",
            f"Issue 35's bar (at most {BID_PATH_BAR - 1:.0%} worse, p50 and p99): "
            f"{verdict}. The alerts in the second run: log to `sub:` "
            f"frame {_q(a['frame'])} ms p50 / p99 / max ({a['frames']:,} frames of "
            f"{a['followed']} followed form 1 subscriptions); to the notification row "
            f"{_q(a['row'])} ms; {a['notifications_per_s']:,} notifications a second; lag "
            f"max {a['lag_max']:,} / last {a['lag_last']:,} events; engines' CPU {cpu} s; "
            f"memory {r['rss_kb_per_subscription']:.1f} KB a subscription. "
            f"`verify_best_offers` afterwards: {r['verify']}",
            *_cpu_lines(r),
        ]
    )


# A kind of process under this many CPU seconds in both runs goes into "the rest".
CPU_SHOWN_S = 1.0


def _cpu_lines(r: dict[str, Any]) -> list[str]:
    """Where each run's CPU went, by kind of process (``machine.cpu_by_kind``), when the
    results have it."""
    if "cpu_s" not in r["without"]:
        return []
    runs = (r["without"]["cpu_s"], r["with"]["cpu_s"])
    kinds = list(runs[1]) + [k for k in runs[0] if k not in runs[1]]
    shown = [k for k in kinds if max(spent.get(k, 0.0) for spent in runs) >= CPU_SHOWN_S]
    rows = [
        "| CPU seconds | " + " | ".join(shown) + " | the rest | all |",
        "|---|" + "---:|" * (len(shown) + 2),
    ]
    for key, spent in zip(("without", "with"), runs, strict=True):
        cells = [f"{spent.get(k, 0.0):.1f}" for k in shown]
        rest = sum(v for k, v in spent.items() if k not in shown)
        total = sum(spent.values())
        rows.append(f"| {key} | " + " | ".join(cells) + f" | {rest:.1f} | {total:.1f} |")
    return [
        "",
        "The machine's CPU by kind of process over each run (its "
        f"{r['seconds']:g} s and the 3 s after; `load` is the benchmark's own client):",
        "",
        *rows,
    ]


def bid_path_into(doc: Path, r: dict[str, Any]) -> None:
    """Put ``--bid-path``'s subsection into ``doc`` between its markers."""
    splice_marked(doc, BID_PATH_BEGIN, BID_PATH_END, bid_path_section(r))
