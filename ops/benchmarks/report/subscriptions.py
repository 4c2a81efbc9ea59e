"""The live-subscriptions subsection (``ops/benchmarks/subscriptions.py``'s results under
``subscriptions``) and the splice that puts it into an existing report: a subsection of the
alerts section, between markers of its own (the level-2 section it once was, *Live
subscriptions: many on one market*, went with the advance pass; the alerts section took
its place)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ops.benchmarks.live.report import splice as splice_marked

TITLE = "### The matching cycle beside live subscriptions on one market (SPEC 8.3, issue 19)"
BEGIN = "<!-- live subscriptions: written by ops/bench subscriptions -->"
END = "<!-- end of the live subscriptions -->"


def section(r: dict[str, Any]) -> str:
    passes = r["passes"]
    events = sum(p["events"] for p in passes) / len(passes)
    notes = sum(p["notifications"] for p in passes) / len(passes)
    # (a part a run did not time is left in the rest)
    parts = {
        name: sum(p[key] for p in passes) / len(passes)
        for name, key in (
            ("reading the log", "_read"),
            ("evaluating the joiners (`advance_members`)", "advance_members"),
            ("loading the evaluators", "_state_load"),
            ("checkpointing the evaluators", "evaluator_dump"),
            ("writing the outbox and the rows", "_write"),
        )
        if key in passes[0]
    }
    other = r["pass_ms"] - sum(parts.values())
    added = r["ms_with"] - r["ms_without"]
    rows = "\n".join(f"| {name} | {ms:,.1f} |" for name, ms in parts.items())
    each = ", ".join(f"{p['ms']:,.0f} ({p.get('_state_load', 0):,.0f})" for p in passes)
    return f"""{TITLE}

`ops/bench --subscriptions-only{" --quick" if r.get("quick") else ""}`, {r["date"]}, commit
{r["commit"]}, {r["cpu"]} ({r["cores"]} cores, shared with other runs: load average
{r["load_before"]:.1f} before and {r["load_after"]:.1f} after). {r["subscriptions"]:,} live
atomic subscriptions on the bench book's market (`office.supplies.pencils`,
{r["book"]["offers"]:,} offers and {r["book"]["bids"]:,} bids), {r["owners"]} owners with
100 each, registered through the service in {r["registering_s"]:,.1f} s; {r["cycles"]}
matching cycles of 40 bids and 10 offers, the subscriptions set aside in every other one.
The method is in `ops/benchmarks/subscriptions.py`.

**The matching cycle**: median {r["ms_with"]:,.1f} ms with the subscriptions active,
{r["ms_without"]:,.1f} ms without, a difference of **{added:+,.1f} ms**. The cycle does not
read the subscriptions: it appends the events and, after its commit, wakes the
subscription engine (one Redis message).

**The subscription engine** (`exchange/subscription_engine`) feeding them each cycle's
events ({events:,.0f} events and {notes:,.0f} notifications a cycle on average): median
**{r["pass_ms"]:,.1f} ms** for all {r["subscriptions"]:,}, on the same cores as the cycle.
Where it goes, per cycle on average:

| part | ms |
|---|---|
{rows}
| the rest: the set's walk of each event, the leases, the channel messages | {other:,.1f} |

Each cycle's batches in ms, with the loading of stored evaluators in brackets: {each}. The
engine keeps every evaluator in memory: it loads them once, when it takes a partition.
"""


def splice(report: Path, results: dict[str, Any]) -> Path:
    """Put the subsection into ``report`` between its markers (at the end the first time)."""
    splice_marked(report, BEGIN, END, section(results).rstrip())
    return report
