"""SPEC 9's matching-index benchmark: the matching tree of ``matching.index`` at 10,000 to
1,000,000 stateless subscriptions (``matching.index.workload``), events per second in one
process and the fitted exponent of the cost per event, beside the naive loop.

    ops/bench --index-only [--quick] [--out DIR]   this benchmark alone; its section of
                                                   DIR/benchmarks.md (default docs/) is
                                                   replaced or added, its plot written

The tree is built once, growing: the first N subscriptions of the generator are the
workload of size N, so each size is measured after adding the subscriptions it lacks.
The naive loop tests every subscription against every event; it is measured at sizes
small enough to finish in seconds and its cost extrapolated along its fitted line (said
so in the report). Times are CPU seconds of this process (``time.process_time``): the
machine is shared, and the wall clock would charge others' work to the index; the wall
clock is reported beside them. Memory per subscription is the growth of the resident set
while the tree grows, divided by the subscriptions added (pattern and test objects
included, as the index holds them).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from typing import Any

from matching.index import MatchingIndex
from matching.index.naive import brute
from matching.index.workload import events, subscriptions
from ops.benchmarks import machine

SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000)
NAIVE_SIZES = (1_000, 3_000, 10_000)
QUICK_SIZES = (1_000, 3_000, 10_000)
QUICK_NAIVE_SIZES = (300, 1_000)
ORDER = ("type", "offer", "price")  # matching.index.choose_order on this workload


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _timed(fn: Any, probes: list[dict[str, Any]]) -> tuple[float, float, list[Any]]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = [fn(e) for e in probes]
    return time.process_time() - cpu, time.perf_counter() - wall, out


def _fit(sizes: list[float], costs: list[float]) -> tuple[float, float]:
    """Least-squares line of log(cost) on log(size): (exponent, intercept)."""
    fit = statistics.linear_regression([math.log(n) for n in sizes], [math.log(c) for c in costs])
    return fit.slope, fit.intercept


def measure(quick: bool = False, n_events: int = 20_000) -> dict[str, Any]:
    sizes = QUICK_SIZES if quick else SIZES
    naive_sizes = QUICK_NAIVE_SIZES if quick else NAIVE_SIZES
    probes = events(2_000 if quick else n_events)
    started = time.perf_counter()
    index = MatchingIndex(ORDER)
    held: dict[int, Any] = {}
    stream = subscriptions(max(sizes))
    points = []
    base = _rss()
    for n in sizes:
        build_cpu = time.process_time()
        while len(index) < n:
            i = len(index)
            pattern, tests = next(stream)
            index.add(i, subject=pattern, tests=tests)
            if i < max(naive_sizes):
                held[i] = (pattern, tests)
        build_cpu = time.process_time() - build_cpu
        cpu, wall, answers = _timed(index.match_counted, probes)
        points.append(
            {
                "subscriptions": n,
                "events": len(probes),
                "cpu_s": cpu,
                "wall_s": wall,
                "events_per_s": len(probes) / cpu,
                "us_per_event": 1e6 * cpu / len(probes),
                "visited_per_event": sum(v for _, v in answers) / len(probes),
                "matches_per_event": sum(len(m) for m, _ in answers) / len(probes),
                "nodes": index.node_count(),
                "bytes_per_subscription": (_rss() - base) / n,
                "build_cpu_s": build_cpu,
            }
        )
        print(f"index {n:>9,}: {points[-1]['events_per_s']:>10,.0f} events/s", flush=True)
    naive = []
    naive_probes = probes[:200]
    for n in naive_sizes:
        subset = {i: held[i] for i in range(n)}
        cpu, wall, answers = _timed(lambda e, s=subset: brute(s, e), naive_probes)
        # The tree must agree with the naive loop: a fresh index of the same N.
        check = MatchingIndex(ORDER)
        for i, (pattern, tests) in subset.items():
            check.add(i, subject=pattern, tests=tests)
        if any(check.match(e) != a for e, a in zip(naive_probes, answers, strict=True)):
            raise SystemExit(f"the index and the naive loop disagree at {n:,} subscriptions")
        naive.append(
            {
                "subscriptions": n,
                "events": len(naive_probes),
                "cpu_s": cpu,
                "wall_s": wall,
                "us_per_event": 1e6 * cpu / len(naive_probes),
            }
        )
    exponent, intercept = _fit(
        [p["subscriptions"] for p in points], [p["us_per_event"] for p in points]
    )
    naive_exponent, naive_intercept = _fit(
        [p["subscriptions"] for p in naive], [p["us_per_event"] for p in naive]
    )
    for p in points:
        p["naive_us_per_event_extrapolated"] = math.exp(
            naive_intercept + naive_exponent * math.log(p["subscriptions"])
        )
    return {
        "quick": quick,
        "order": list(ORDER),
        "points": points,
        "naive": naive,
        "exponent": exponent,
        "naive_exponent": naive_exponent,
        "seconds": time.perf_counter() - started,
        "load": os.getloadavg()[0],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": machine.cpu_model(),
        "cores": os.cpu_count() or 0,
    }
