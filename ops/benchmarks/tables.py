"""The numbers of each figure, pulled out of a run's results (shared by report and plots)."""

from __future__ import annotations

from typing import Any

from ops.benchmarks.paper import FIGURE_4

STRATEGIES = ("paper", "range")

LABELS = {
    "fixed": "fixed",
    "proportional": "proportional",
    "large_intermediate": "large intermediate results",
    "geometric": "fixed geometric",
}


def experiments(results: dict[str, Any], figure: int) -> list[dict[str, Any]]:
    return [e for e in results["experiments"] if e.get("figure") == figure and not e.get("skipped")]


def find(results: dict[str, Any], figure: int, kind: str, subs: int) -> dict[str, Any] | None:
    for e in experiments(results, figure):
        if e["kind"] == kind and e["subs"] == subs:
            return e
    return None


def batch(e: dict[str, Any], size: int) -> dict[str, Any] | None:
    return next((b for b in e["batches"] if b["batch"] == size), None)


def median(e: dict[str, Any], strategy: str, size: int = 1) -> float | None:
    b = batch(e, size)
    if b is None or strategy not in b["times"]:
        return None
    return float(b["times"][strategy]["median"])


def load_phases(e: dict[str, Any], strategy: str) -> dict[str, float]:
    """Figure 4's preprocessing phases of one strategy, in seconds."""
    load = e["loads"][strategy]
    gen = e["generation"]
    return {
        "subs_generation": gen["subs"],
        "subs_decode": load["decode_subs"],
        "subs_copy": load["copy_subs"],
        "pubs_generation": gen["pubs"],
        "pubs_copy": load["decode_pubs"] + load["copy_pubs"],
        "indexes": load["indexes"],
        "statistics": load["statistics"],
    }


def figure4_rows(results: dict[str, Any]) -> dict[str, Any]:
    sizes = sorted(e["subs"] for e in experiments(results, 5) if e["kind"] == "fixed")
    bars: dict[int, dict[str, dict[str, float]]] = {}
    for subs in sizes:
        e = find(results, 5, "fixed", subs)
        assert e is not None
        bars[subs] = {}
        for strategy in STRATEGIES:
            if strategy not in e["loads"]:
                continue
            p = load_phases(e, strategy)
            bars[subs][strategy] = {
                "generation": p["subs_generation"] + p["pubs_generation"],
                "decode": p["subs_decode"],
                "copy": p["subs_copy"] + p["pubs_copy"],
                "indexes": p["indexes"],
                "statistics": p["statistics"],
                "matching": median(e, strategy) or 0.0,
            }
    published = {
        subs: {
            "generation": FIGURE_4["subs_generation"][subs] + FIGURE_4["pubs_generation"][subs],
            "copy": FIGURE_4["subs_copy"][subs] + FIGURE_4["pubs_copy"][subs],
            "indexes": FIGURE_4["indexes"][subs],
            "statistics": FIGURE_4["statistics"][subs],
            "matching": FIGURE_4["matching_total"][subs],
        }
        for subs in sizes
        if subs in FIGURE_4["indexes"]
    }
    return {"sizes": sizes, "bars": bars, "published": published}


def figure5_points(results: dict[str, Any]) -> dict[str, dict[str, list[tuple[float, float]]]]:
    points: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for e in experiments(results, 5):
        for strategy in STRATEGIES:
            m = median(e, strategy)
            if m is not None:
                points.setdefault(e["kind"], {}).setdefault(strategy, []).append(
                    (e["subs"], m * 1000)
                )
    return points


def figure6_points(
    results: dict[str, Any], *, throughput: bool
) -> dict[str, dict[str, list[tuple[float, float]]]]:
    points: dict[str, dict[str, list[tuple[float, float]]]] = {}
    sizes = {e["subs"] for e in experiments(results, 6)}
    for e in experiments(results, 6):
        for b in e["batches"]:
            for strategy in STRATEGIES:
                if strategy not in b["times"]:
                    continue
                m = float(b["times"][strategy]["median"])
                y = b["batch"] / m if throughput else m * 1000
                label = strategy if len(sizes) == 1 else f"{strategy}, {e['subs']:,} subs"
                points.setdefault(e["kind"], {}).setdefault(label, []).append((b["batch"], y))
    return points
