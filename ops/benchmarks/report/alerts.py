"""The alerts section (``ops/benchmarks/alerts.py``'s results under ``alerts``), its plot,
and its splice into an existing report: it takes the place of the live-subscriptions
section of the retired advance pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .doc import splice_section

TITLE = "## Alerts: live subscriptions on two engine processes (SPEC 9, issue 35)"
# The section this one replaces (the advance pass's figures, retired with it).
REPLACED = "## Live subscriptions: many on one market (SPEC 8.3, issue 19)"
PLOT = "img/bench-alerts.png"
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


def section(r: dict[str, Any]) -> str:
    runs = r["runs"]
    ok = [x for x in runs if "failed" not in x]
    before = json.loads(BEFORE.read_text()) if BEFORE.exists() else None
    out = [
        TITLE,
        "",
        f"`ops/bench alerts`, {r['date']}, commit {r['commit']}, {r['cpu']} ({r['cores']} "
        "cores), on loopback. **The machine was shared with four other engineers' tests "
        "and benchmarks while it ran: every figure below was taken under load** (the load "
        "average beside each run; 2 means both cores busy). Each size: a fresh bench "
        "database and its own stack (uvicorn, Celery's matching and tasks workers and beat, "
        "and two `manage.py subscription_engine` processes sharing the partitions); the "
        "subscriptions (70% form 1 `SELECT price WHERE type = 'trade', subject = S, price > "
        "P`, 20% form 3 `TRADES AS a NEXT{b.price > 1.0k * a.price} TRADES AS b WITHIN "
        "10m`, 10% form 4 `SELECT MIN(ask) FROM offers WHERE subject = S`, over 100 "
        "subjects) registered in bulk through the service (`subscriptions_create_many`, 100 "
        "a user); once both engines held every one and had caught up, trades appended on "
        "random subjects of the 100 at 50 a second for 60 s (when the appender fell behind "
        "on the loaded machine, the trades due went in one transaction). Frame delays are "
        "from the event's log time to the frame's arrival at a client following 40 of the "
        "first owner's form 1 subscriptions on one WebSocket; row delays, to the commit of "
        "every notification's row. Lag is the larger of the two engines' heartbeats, read "
        "each second. Memory: the two engines' resident memory once they held every "
        "subscription, less theirs before any existed. The method is in "
        "`ops/benchmarks/alerts.py`; the raw results of these runs in "
        "`ops/benchmarks/results/alerts.json` (a run writes `test-artifacts/bench/alerts.json`).",
        "",
        f"![latency against live subscriptions]({PLOT})",
        "",
        *table(runs),
        "",
    ]
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
    out += _profile(
        r.get("profile"),
        "And after (py-spy at 50 Hz on the engine processes while the trades were appended; "
        "share of its samples, inclusive):",
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
    ax.set_title(f"{results['alerts']['cpu']}, shared (loaded) machine", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def splice(report: Path, results: dict[str, Any]) -> Path:
    text = report.read_text() if report.exists() else ""
    title = REPLACED if REPLACED in text and TITLE not in text else TITLE
    return splice_section(report, title, section(results))
