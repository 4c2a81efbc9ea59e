"""The live-subscriptions section (``ops/benchmarks/subscriptions.py``'s results under
``subscriptions``) and the splice that puts it into an existing report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .doc import splice_section

TITLE = "## Live subscriptions: many on one market (SPEC 8.3, issue 19)"


def section(r: dict[str, Any]) -> str:
    passes = r["passes"]
    events = sum(p["events"] for p in passes) / len(passes)
    notes = sum(p["notifications"] for p in passes) / len(passes)
    # (a part a run did not time is left in the rest)
    parts = {
        name: sum(p[key] for p in passes) / len(passes)
        for name, key in (
            ("reading the log", "subscriptions_log_read"),
            ("evaluating (`advance_members`)", "advance_members"),
            ("loading the evaluators", "_state_load"),
            ("storing the evaluators", "_dump"),
        )
        if key in passes[0]
    }
    other = r["pass_ms"] - sum(parts.values())
    rest = "" if "storing the evaluators" in parts else ", storing the evaluators"
    single = r["single"]
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
read the subscriptions: it appends the events and, after its commit, asks for an advance
pass (one Redis key); the pass runs on the default queue's worker.

**The advance pass** that feeds them each cycle's events ({events:,.0f} events and
{notes:,.0f} notifications a cycle on average): median **{r["pass_ms"]:,.1f} ms** for all
{r["subscriptions"]:,}, on the same cores as the cycle. Where it goes, per pass on average:

| part | ms |
|---|---|
{rows}
| the rest: locking the rows, writing them and the outbox, the channel messages{rest} | {other:,.1f} |

Each pass in ms, with the loading of stored evaluators in brackets: {each}. A worker keeps
the evaluators it fed in memory (`services/subscription_pass.py`) and loads a stored one
only when the row changed since its own pass: the first pass loads them all (nothing is
kept yet), and so does the pass after each cycle run without them (setting them aside and
back rewrites every row); the others load none.

Before the pass, the task gave each subscription its own step (a read of the log, its
evaluator loop, its writes): **{single["ms_per_subscription"]:,.2f} ms a subscription**
(timed on {single["sample"]:,} of them fed one cycle of {single["events"]} events), so
{single["ms_per_subscription"] * r["subscriptions"] / 1000:,.1f} s for all of them each cycle.
"""


def splice(report: Path, results: dict[str, Any]) -> Path:
    """Put the section into ``report`` (see ``splice_section``)."""
    return splice_section(report, TITLE, section(results))
