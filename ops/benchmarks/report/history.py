"""The historic-read section (``ops/benchmarks/history.py``'s results under ``history``)
and the splice that puts it into an existing report when that benchmark runs alone."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ops.benchmarks.report.doc import splice_section

TITLE = "## History: the event log read back (SPEC 8.1, SPEC 9)"
RATE = 50_000
ROLE = {
    "format=jsonl": "the whole log",
    "subject=": "one market's events",
    "since=": "one day's events",
}


def _role(query: str) -> str:
    return next((text for key, text in ROLE.items() if key in query.split("&", 1)[-1]), query)


def _resume_row(resume: dict[str, Any]) -> str:
    """A WebSocket resume's row: which stream, how it was framed, its rate."""
    stream = resume["query"].removesuffix(" resume")
    what = (
        "the `events:office.>` WebSocket resume"
        if stream.startswith("events:")
        else "a `sub:<id>` WebSocket resume (an outbox of `SELECT *` notifications)"
    )
    framing = (
        f"`batch` frames, {resume['frames']:,} of them"
        if resume.get("batch")
        else "one frame an event"
    )
    return (
        f"| {what} (20,000 events a request, resumed after each; {framing}) | `resume` | "
        f"{resume['events']:,} | | {resume['seconds']:,.2f} s | | "
        f"**{resume['events_per_s']:,}** | {resume['load_before']:.1f} / "
        f"{resume['load_after']:.1f} |"
    )


def section(r: dict[str, Any]) -> str:
    size = r["size"]
    full = size["events"] >= 1_000_000
    # SPEC 9's historic subscription: the batched events: resume over the whole log (older
    # results have none; their verdict was the whole log over HTTP).
    whole = next(
        (
            x
            for x in r.get("resumes") or []
            if x["batch"] and x["query"].startswith("events:") and x["events"] >= size["events"]
        ),
        r["reads"][0],
    )
    verdict = (
        "not measured at 1,000,000 (a quick run)"
        if not full
        else ("**met**" if whole["events_per_s"] >= RATE else "**missed**")
    )
    rows = "\n".join(
        f"| {_role(x['query'])} | `{x['query']}` | {x['events']:,} | {x['bytes'] / 1e6:,.1f} MB "
        f"| {x['seconds']:,.2f} s | {x['first_byte_s']:,.3f} s | **{x['events_per_s']:,}** "
        f"| {x['load_before']:.1f} / {x['load_after']:.1f} |"
        for x in r["reads"]
    )
    # ``resume``: one events: resume, one frame an event (the results of earlier runs)
    for resume in r.get("resumes") or ([r["resume"]] if r.get("resume") else []):
        rows += "\n" + _resume_row(resume)
    cost = "\n" + cycle_paragraph(r["cycle"]) if r.get("cycle") else ""
    plan = r["one_day"]["plan"]
    touched = sorted(set(re.findall(r"on (exchange_event_(?:p\d{8}|default))", plan)))
    return f"""{TITLE}

`ops/bench --history-only{" --quick" if r["quick"] else ""}`, {r["date"]}, commit {r["commit"]},
{r["cpu"]} ({r["cores"]} cores, shared with other test runs: the load average before and after
each read is beside it). {size["events"]:,} events over {size["days"]} days on
{size["markets"]} markets, read as `GET /api/v1/events/?format=jsonl` from uvicorn on
loopback by a client that counts the lines as they arrive (`httpx`), and replayed over a
WebSocket (`websockets`, compression as negotiated by default) by a client that parses each
frame. SPEC 9 asks a historic subscription over 1,000,000 events to stream at 50,000
events/s or more (here the batched `events:office.>` resume over the whole log):
{verdict}.

| read | query | events | size | time | first byte | events/s | load before / after |
|---|---|---|---|---|---|---|---|
{rows}
{cost}
A one-day read ({r["one_day"]["day"]}, `since` and `until` on that day) touches
{", ".join(f"`{t}`" for t in touched) or "no partition"}; its first page's plan
(`EXPLAIN (ANALYZE, BUFFERS)`, the line's expression left out of the output):

```
{_short(plan)}
```
"""


def _short(plan: str) -> str:
    """The plan without the projection's long expression."""
    return "\n".join(line for line in plan.splitlines() if not line.strip().startswith("Output:"))


def cycle_paragraph(cycle: dict[str, Any]) -> str:
    """What the log's writer adds to a matching cycle (``history.py --cycles``'s JSON)."""
    text = (
        f"The log's writer in the matching cycle, on a book of {cycle['offers']:,} offers "
        f"and {cycle['bids']:,} bids, {cycle['cycles']} cycles of 40 bids and 10 offers "
        f"placed through the services, the writer off in every other one: median "
        f"{cycle['ms_with']:,.1f} ms with it, {cycle['ms_without']:,.1f} ms without, "
        f"**{100 * cycle['added']:+.1f}%** (SPEC 9: at most 10%; load "
        f"{cycle['load_before']:.1f} / {cycle['load_after']:.1f}, so single cycles "
        f"vary more than that on this machine).\n"
    )
    if "cpu_added" in cycle:
        text += (
            f"In CPU (the cycle's process and its PostgreSQL backend, which the other "
            f"work on the machine does not inflate), mean per cycle: "
            f"{cycle['cpu_ms_with']:,.1f} ms with the writer, "
            f"{cycle['cpu_ms_without']:,.1f} ms without, "
            f"**{100 * cycle['cpu_added']:+.1f}%**.\n"
        )
    return text


def splice(report: Path, results: dict[str, Any]) -> Path:
    """Put the section into ``report`` (see ``splice_section``)."""
    return splice_section(report, TITLE, section(results))
