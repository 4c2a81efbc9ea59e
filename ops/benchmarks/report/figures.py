"""Correctness, Figures 4 to 7 beside the paper, and the plans of the timed matches."""

from __future__ import annotations

from typing import Any

from ops.benchmarks import paper
from ops.benchmarks.tables import LABELS, STRATEGIES, batch, experiments, find, load_phases, median

from . import fmt
from .doc import Doc
from .fmt import DASH
from .spark import spark_verdict

FIGURE_4_ROWS = [
    ("subscription generation (Spark)", "subs_generation", "subs_generation"),
    ("subscription decode (parse)", "subs_decode", None),
    ("subscription encode + COPY", "subs_copy", "subs_copy"),
    ("publication generation (Spark)", "pubs_generation", "pubs_generation"),
    ("publication decode + encode + COPY", "pubs_copy", "pubs_copy"),
    ("index creation", "indexes", "indexes"),
    ("statistics (histograms)", "statistics", "statistics"),
]


def by_kind(exps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order = list(LABELS)
    return sorted(exps, key=lambda e: (order.index(e["kind"]), e["subs"]))


def correctness(doc: Doc) -> None:
    checked = oracle = 0
    bad: list[str] = []
    for e in doc.results["experiments"]:
        if e.get("skipped"):
            continue
        for b in e["batches"]:
            checked += 1
            if b["oracle"] is not None:
                oracle += 1
            if not b["identical"] or b["oracle"] is False:
                bad.append(f"{e['kind']} {e['subs']:,} subs, batch {b['batch']}")
    verdict = "**identical pairs**: " + (
        "yes" if not bad else "NO, they differ for " + "; ".join(bad)
    )
    doc.prose("correctness", verdict=verdict, checked=checked, oracle=oracle)
    doc.add(*spark_verdict(doc), "")
    skipped = [e for e in doc.results["experiments"] if e.get("skipped")]
    if skipped:
        doc.add(
            "Not run (past the time budget): "
            + "; ".join(f"{s['kind']} at {s['subs']:,}" for s in skipped)
            + ".",
            "",
        )


def figure4(doc: Doc) -> None:
    sizes = sorted(e["subs"] for e in experiments(doc.results, 5) if e["kind"] == "fixed")
    if not sizes:
        return
    doc.prose("figure4")
    head = ["phase"]
    for subs in sizes:
        head += [f"paper 2006, {subs:,}", f"`paper`, {subs:,}", f"`range`, {subs:,}"]
    doc.add(fmt.row(head), "|" + "---|" * len(head))
    data = {}
    for subs in sizes:
        e = find(doc.results, 5, "fixed", subs)
        assert e is not None
        data[subs] = (e, {s: load_phases(e, s) for s in STRATEGIES if s in e["loads"]})
    for label, ours, theirs in FIGURE_4_ROWS:
        cells = [label]
        for subs in sizes:
            phases = data[subs][1]
            published = paper.FIGURE_4[theirs].get(subs) if theirs else None
            cells.append(fmt.s(published, 2) if published is not None else DASH)
            cells += [fmt.s(phases[s][ours], 2) if s in phases else DASH for s in STRATEGIES]
        doc.add(fmt.row(cells))
    cells = ["**preprocessing total**"]
    for subs in sizes:
        phases = data[subs][1]
        published = paper.FIGURE_4["preprocessing_total"].get(subs)
        cells.append(fmt.s(published, 1) if published else DASH)
        cells += [
            f"**{fmt.s(sum(phases[s].values()), 1)}**" if s in phases else DASH for s in STRATEGIES
        ]
    doc.add(fmt.row(cells))
    published_keys = {"intermediate": "intermediate_answer", "final": "final_aggregation"}
    for label, key in (("intermediate answer", "intermediate"), ("final aggregation", "final")):
        cells = [label]
        for subs in sizes:
            e = data[subs][0]
            b = batch(e, 1)
            cells.append(fmt.s(paper.FIGURE_4[published_keys[key]].get(subs), 3))
            ph = b["phases"].get(key) if b else None
            cells.append(fmt.s(ph["median"], 4) if ph else DASH)
            split = fmt.range_split(e)
            cells.append(f"({fmt.s(split[key] / 1000, 4)})" if split else DASH)
        doc.add(fmt.row(cells))
    cells = ["**matching total**"]
    for subs in sizes:
        e = data[subs][0]
        cells.append(fmt.s(paper.FIGURE_4["matching_total"].get(subs), 3))
        cells += [f"**{fmt.s(median(e, s), 4)}**" for s in STRATEGIES]
    doc.add(fmt.row(cells), "", "![Figure 4](img/bench-fig4.png)", "")


def figure5(doc: Doc) -> None:
    exps = experiments(doc.results, 5)
    if not exps:
        return
    doc.prose("figure5")
    doc.add(
        "| workload | subscriptions | `paper` ms | `range` ms | `paper` / `range` | pairs "
        "| paper 2006 |",
        "|---|---|---|---|---|---|---|",
    )
    for e in by_kind(exps):
        pap, rng = median(e, "paper"), median(e, "range")
        b = batch(e, 1)
        doc.add(
            f"| {LABELS[e['kind']]} | {e['subs']:,} | {fmt.ms(pap)} | {fmt.ms(rng)} | "
            f"{fmt.ratio(pap, rng)} | {b['pairs'] if b else DASH} | "
            f"{paper.FIGURE_5_SHAPE[e['kind']]} |"
        )
    doc.add("", "![Figure 5](img/bench-fig5.png)", "")


def _batch_rows(
    exps: list[dict[str, Any]],
) -> list[tuple[dict[str, Any], dict[str, Any], float | None, float | None]]:
    """Each batch of each experiment with its ``paper`` and ``range`` medians (seconds)."""
    return [
        (
            e,
            b,
            b["times"].get("paper", {}).get("median"),
            b["times"].get("range", {}).get("median"),
        )
        for e in exps
        for b in e["batches"]
    ]


def figure6_7(doc: Doc) -> None:
    exps = by_kind(experiments(doc.results, 6))
    if not exps:
        return
    doc.prose("figure6")
    doc.add(
        "| workload | subscriptions | batch | `paper` ms | `range` ms | `paper` / `range` "
        "| pairs | paper 2006 |",
        "|---|---|---|---|---|---|---|---|",
    )
    for e, b, pap, rng in _batch_rows(exps):
        doc.add(
            f"| {LABELS[e['kind']]} | {e['subs']:,} | {b['batch']:,} | {fmt.ms(pap)} | "
            f"{fmt.ms(rng)} | {fmt.ratio(pap, rng)} | {b['pairs']} | "
            f"{paper.FIGURE_6_SHAPE[e['kind']]} |"
        )
    for e in exps:
        if e.get("left_out"):
            doc.add(
                "",
                doc.fragment(
                    "figure6_left_out",
                    kind=LABELS[e["kind"]],
                    subs=f"{e['subs']:,}",
                    left_out=", ".join(f"{b:,}" for b in e["left_out"]),
                    terms=e["workload"]["parameters"].get("terms"),
                    limit=f"{doc.results['settings'].get('limit', 0):,}",
                ),
            )
    doc.add("", "![Figure 6](img/bench-fig6.png)", "")
    doc.prose("figure7")
    doc.add(
        "| workload | subscriptions | batch | `paper` publications/s | `range` publications/s "
        "| paper 2006 |",
        "|---|---|---|---|---|---|",
    )
    for e, b, pap, rng in _batch_rows(exps):
        doc.add(
            f"| {LABELS[e['kind']]} | {e['subs']:,} | {b['batch']:,} | "
            f"{fmt.rate(b['batch'] / pap if pap else None)} | "
            f"{fmt.rate(b['batch'] / rng if rng else None)} | "
            f"{paper.FIGURE_7_SHAPE[e['kind']]} |"
        )
    doc.add("", "![Figure 7](img/bench-fig7.png)", "")


def plans(doc: Doc) -> None:
    shown = []
    for e in doc.results["experiments"]:
        if e.get("skipped") or not e.get("plans"):
            continue
        for key, statements in e["plans"].items():
            strategy, size = key.split(":")
            shown.append((e, strategy, int(size), statements))
    if not shown:
        return
    doc.prose("plans")
    for e, strategy, size, statements in shown:
        planning, execution = fmt.plan_times(statements)
        doc.add(
            f"<details><summary>{LABELS[e['kind']]}, {e['subs']:,} subscriptions, batch of "
            f"{size:,}, <code>{strategy}</code>: {len(statements)} statement(s), planning "
            f"{planning:.2f} ms, execution {execution:.2f} ms</summary>",
            "",
        )
        for sql, plan in statements:
            doc.add("```sql", sql.strip(), "```", "```", plan.strip(), "```", "")
        doc.add("</details>", "")
