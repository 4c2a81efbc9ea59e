"""The Spark batch matcher beside ``range``: its verdict, times, loads and fixed cost."""

from __future__ import annotations

from typing import Any

from ops.benchmarks.tables import LABELS, median

from . import fmt
from .doc import Doc


def spark_runs(doc: Doc) -> list[dict[str, Any]]:
    order = list(LABELS)
    runs = [e for e in doc.results["experiments"] if not e.get("skipped") and e.get("spark")]
    return sorted(runs, key=lambda e: (e["figure"], order.index(e["kind"]), e["subs"]))


def spark_verdict(doc: Doc) -> list[str]:
    runs = spark_runs(doc)
    if not runs:
        return ["The Spark batch matcher was not run (`--no-spark`)."]
    checked = sum(len(e["spark"]["batches"]) for e in runs)
    bad = [
        f"{e['kind']} {e['subs']:,} subs, batch {b['batch']}"
        for e in runs
        for b in e["spark"]["batches"]
        if not b["identical"]
    ]
    if bad:
        return [
            "**Spark matcher, same pairs as `range`**: NO, they differ for "
            + "; ".join(bad)
            + ". The run failed (exit 1)."
        ]
    return [
        "**Spark matcher, same pairs as `range`**: yes. Every run of the Spark batch "
        f"matcher ({checked} batch configurations, each run checked) returned exactly "
        "the pairs `range` returned for the same batch."
    ]


def spark(doc: Doc) -> None:
    runs = spark_runs(doc)
    if not runs:
        return
    r = doc.results
    kinds = r["settings"].get("spark_kinds")
    which = (
        "each Figure 6 workload"
        if kinds is None or set(kinds) >= set(r["settings"]["kinds"])
        else f"the Figure 6 workload{'s' if len(kinds) > 1 else ''} of "
        + ", ".join(LABELS[k] for k in kinds)
    )
    quick = f" (in this quick run, only the largest batch of {which})"
    doc.prose(
        "spark",
        quick_note=quick if r["mode"] == "quick" else "",
        spark_master=r["machine"]["spark_master"],
    )
    doc.add(
        *spark_verdict(doc),
        "",
        "| figure | workload | subscriptions | batch | Spark ms | `range` ms | Spark / "
        "`range` | pairs | pairs/s | publications/s | same pairs as `range` |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    )
    for e in runs:
        for b in e["spark"]["batches"]:
            t = float(b["times"]["median"])
            rng = median(e, "range", b["batch"])
            doc.add(
                f"| {e['figure']} | {LABELS[e['kind']]} | {e['subs']:,} | {b['batch']:,} | "
                f"{fmt.ms(t)} | {fmt.ms(rng)} | {fmt.ratio(t, rng)} | {b['pairs']:,} | "
                f"{fmt.per_s(b['pairs'] / t if t else None)} | "
                f"{fmt.per_s(b['batch'] / t if t else None)} | "
                f"{'yes' if b['identical'] else '**NO**'} |"
            )
    doc.add("", doc.fragment("spark_load"), "")
    doc.add(
        "| figure | workload | subscriptions | publications | Spark: subscriptions | "
        "Spark: publications | predicate rows (subscriptions) | `range` load |",
        "|---|---|---|---|---|---|---|---|",
    )
    for e in runs:
        sp = e["spark"]
        rng_load = e["loads"].get("range", {}).get("total")
        doc.add(
            f"| {e['figure']} | {LABELS[e['kind']]} | {e['subs']:,} | "
            f"{e['workload']['pubs']:,} | "
            f"{fmt.s(sp['load']['subs'], 2)} | {fmt.s(sp['load']['pubs'], 2)} | "
            f"{sp['rows']['subs']:,} | {fmt.s(rng_load, 2)} |"
        )
    timed = [(e, b) for e in runs for b in e["spark"]["batches"]]
    fastest = min(float(b["times"]["median"]) for _, b in timed)
    cap = r["settings"].get("spark_max_subs")
    beyond = sorted(
        {
            e["subs"]
            for e in r["experiments"]
            if not e.get("skipped") and cap is not None and e["subs"] > cap
        }
    )
    if beyond:
        sizes = ", ".join(f"{n:,}" for n in beyond)
        doc.add("", doc.fragment("spark_not_run", sizes=sizes, cap=f"{cap:,}"))
    faster = [
        f"{LABELS[e['kind']]} at {e['subs']:,}, batch {b['batch']:,}"
        for e, b in timed
        if (rng := median(e, "range", b["batch"])) is not None and float(b["times"]["median"]) < rng
    ]
    comparison = (
        f"It was faster than `range` on {len(faster)} of {len(timed)} batches "
        f"({'; '.join(faster)}). "
        if faster
        else f"On this machine it was slower than `range` on all {len(timed)} batches. "
    )
    doc.add("")
    doc.prose("spark_cost", fastest=fmt.ms(fastest), comparison=comparison)
