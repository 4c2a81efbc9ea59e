"""SPEC 9's patterns benchmark: 1,000 to 100,000 live form 3 patterns (SPEC 8.3's four
examples with random parameters over 100 markets) in one process through
``matching.subscriptions.run.multi``, beside the naive evaluator.

    ops/bench --patterns-only [--quick] [--out DIR]   this benchmark alone; its section of
                                                      DIR/benchmarks.md (default docs/) is
                                                      replaced or added, its plot written

The workload (``pattern_texts``, ``event_stream``; deterministic for a seed): markets
``bench.m0`` to ``bench.m99``; an event is a trade (half of them) or a best-offer change
of one of 10 offers, on a uniformly drawn market, 2 seconds after the previous one; each
market's price and each offer's best value take a random walk of -3 to +3 cents. Every
pattern is one of the four examples on one market (its ``FILTER``s name the market), in
turn, with random parameters:

1. a trade above X, then the next trade on the market below Y (X from 0.80 to 1.20, Y
   0.02 to 0.10 below X);
2. a trade, then the next trade on the market more than p% higher (p from 1 to 10),
   ``WITHIN`` 10 to 60 minutes (the SPEC's text has no bound; without one every trade
   would leave an instance waiting for ever);
3. prices rising trade after trade on the market for at least D minutes (D from 5 to 30);
4. the best value of offer K on the market fell three times in a row within W minutes
   (K one of the 10 offers, W from 5 to 20).

At each size the patterns are registered, ``warm`` events run untimed (so that instances
wait as they do in a running system), then ``timed`` events are measured. The naive
evaluator pushes every event to every pattern's own ``Subscription`` (SPEC 8.3: "tries
every instance of every pattern"); it is measured at small sizes, its cost per event
extrapolated linearly (said so in the report), and its outputs compared with the set's.
Times are CPU seconds of this process; memory per pattern is the growth of the resident
set from before the patterns were registered to after the warm-up, per pattern.
"""

from __future__ import annotations

import datetime as dt
import gc
import math
import os
import random
import statistics
import time
from collections.abc import Hashable
from decimal import Decimal
from typing import Any

from matching.subscriptions import Subscription, event_from_dict, parse_query
from matching.subscriptions.events import Event
from matching.subscriptions.run.multi import SubscriptionSet
from ops.benchmarks import machine

MARKETS = 100
OFFERS = 10
START = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
SIZES = (1_000, 3_000, 10_000, 30_000, 100_000)
NAIVE_SIZES = (100, 300, 1_000)
QUICK_SIZES = (100, 300)
QUICK_NAIVE_SIZES = (30, 100)
ORDER = ("type", "offer", "price")
RATE = 5_000
FACTOR = 100

_TRADE = "type = 'trade' AND subject = '{m}'"
_BEST = "type = 'best_offer' AND subject = '{m}'"
KINDS = (
    "SELECT a.price, b.price FROM FILTER{{" + _TRADE + " AND price > {x}}}(EVENTS) AS a "
    "NEXT{{b.subject = a.subject AND b.price < {y}}} FILTER{{" + _TRADE + "}}(EVENTS) AS b",
    "SELECT a.price, b.price FROM FILTER{{" + _TRADE + "}}(EVENTS) AS a "
    "NEXT{{b.subject = a.subject AND b.price > {k} * a.price}} FILTER{{" + _TRADE + "}}(EVENTS) "
    "AS b WITHIN {w}m",
    "SELECT a.price, b.price, n, DUR FROM FILTER{{" + _TRADE + "}}(EVENTS) AS a "
    "FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} "
    "FILTER{{" + _TRADE + "}}(EVENTS) AS b WHERE DUR >= {d}m",
    "SELECT a.offer, a.value, b.value, n FROM FILTER{{" + _BEST + " AND offer = {o}}}(EVENTS) "
    "AS a FOLD{{b.offer = a.offer, b.value < b.last.value, COUNT AS n}} "
    "FILTER{{" + _BEST + "}}(EVENTS) AS b WHERE n = 3 WITHIN {w}m",
)


def _market(i: int) -> str:
    return f"bench.m{i}"


def pattern_texts(n: int, seed: int = 3) -> list[str]:
    """``n`` patterns, the four kinds in turn, each on a random market."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        x = Decimal(rng.randrange(80, 121)) / 100
        out.append(
            KINDS[i % 4].format(
                m=_market(rng.randrange(MARKETS)),
                x=x,
                y=x - Decimal(rng.randrange(2, 11)) / 100,
                k=1 + Decimal(rng.randrange(1, 11)) / 100,
                w=rng.randrange(10, 61) if i % 4 == 1 else rng.randrange(5, 21),
                d=rng.randrange(5, 31),
                o=rng.randrange(1, OFFERS + 1),
            )
        )
    return out


def event_stream(n: int, seed: int = 5) -> list[Event]:
    """``n`` events (typed once, as the live path holds them)."""
    rng = random.Random(seed)
    price = [100] * MARKETS
    value = [[100] * OFFERS for _ in range(MARKETS)]
    out = []
    for seq in range(1, n + 1):
        m = rng.randrange(MARKETS)
        raw: dict[str, Any] = {
            "seq": seq,
            "time": (START + dt.timedelta(seconds=2 * seq)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "subject": _market(m),
        }
        if rng.random() < 0.5:
            price[m] = min(200, max(50, price[m] + rng.randint(-3, 3)))
            raw.update(type="trade", offer=rng.randrange(1, OFFERS + 1), trade=seq,
                       price=str(Decimal(price[m]) / 100), quantity=1)  # fmt: skip
        else:
            o = rng.randrange(OFFERS)
            value[m][o] = min(200, max(50, value[m][o] + rng.randint(-3, 3)))
            raw.update(type="best_offer", offer=o + 1, matching_bids=1,
                       value=str(Decimal(value[m][o]) / 100))  # fmt: skip
        out.append(event_from_dict(raw))
    return out


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _subscriptions(texts: list[str]) -> list[Subscription]:
    queries: dict[str, Any] = {}
    out = []
    for text in texts:
        query = queries.get(text)
        if query is None:
            query = queries[text] = parse_query(text)
        sub = Subscription(query, now=START)
        sub.history_done()  # registered before the first event: live, with no history
        out.append(sub)
    return out


def _run_set(
    texts: list[str],
    warm: list[Event],
    timed: list[Event],
    *,
    share: bool = True,
    keep: bool = False,
) -> dict[str, Any]:
    """The set's run; ``share=False`` gives every pattern its own automaton (as before
    patterns equal but for ``WHERE`` shared one), for comparisons in one process. The
    timed events' outputs are counted, and kept (under ``_outputs``) only with ``keep``:
    a running system hands them on rather than holding them all, and holding them made
    the collector's full collections of the whole heap more likely in the timed window.
    That window starts after a full collection, so that it does not depend on where
    registering left the collector (``full_collections``: those that ran during it)."""
    base = _rss()
    started = time.process_time()
    multi = SubscriptionSet(ORDER, share=share)
    for i, sub in enumerate(_subscriptions(texts)):
        multi.add(i, sub)
    build = time.process_time() - started
    for e in warm:
        multi.push(e)
    before = multi.total.events, multi.total.sources, multi.total.instances
    outputs: list[list[tuple[Hashable, Any]]] = []
    produced = 0
    full = _FullCollections()
    gc.collect()
    gc.callbacks.append(full)
    wall, cpu = time.perf_counter(), time.process_time()
    for e in timed:
        found = multi.push(e)
        produced += len(found)
        if keep:
            outputs.append(found)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    gc.callbacks.remove(full)
    n = len(timed)
    return {
        "patterns": len(texts),
        "events": n,
        "cpu_s": cpu,
        "wall_s": wall,
        "events_per_s": n / cpu,
        "us_per_event": 1e6 * cpu / n,
        "sources_per_event": (multi.total.sources - before[1]) / n,
        "instances_touched_per_event": (multi.total.instances - before[2]) / n,
        "outputs_per_event": produced / n,
        "full_collections": full.count,
        "instances_held": multi.instances,
        "bytes_per_pattern": (_rss() - base) / len(texts),
        "build_cpu_s": build,
        "_outputs": outputs,
    }


class _FullCollections:
    """A ``gc.callbacks`` entry counting the full collections (generation 2) that end."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2:
            self.count += 1


def _run_naive(texts: list[str], warm: list[Event], timed: list[Event]) -> dict[str, Any]:
    subs = _subscriptions(texts)
    for e in warm:
        for sub in subs:
            sub.push(e, live=True)
    cpu = time.process_time()
    outputs: list[list[tuple[Hashable, Any]]] = []
    for e in timed:
        found: list[tuple[Hashable, Any]] = []
        for i, sub in enumerate(subs):
            found.extend((i, o) for o in sub.push(e, live=True))
        outputs.append(found)
    cpu = time.process_time() - cpu
    return {
        "patterns": len(texts),
        "events": len(timed),
        "cpu_s": cpu,
        "us_per_event": 1e6 * cpu / len(timed),
        "_outputs": outputs,
    }


def _same(a: list[list[tuple[Hashable, Any]]], b: list[list[tuple[Hashable, Any]]]) -> bool:
    """The same outputs per event and pattern (the set may order patterns differently)."""
    return all(sorted(x, key=repr) == sorted(y, key=repr) for x, y in zip(a, b, strict=True))


def measure(quick: bool = False) -> dict[str, Any]:
    sizes = QUICK_SIZES if quick else SIZES
    naive_sizes = QUICK_NAIVE_SIZES if quick else NAIVE_SIZES
    warm_n, timed_n = (200, 200) if quick else (3_000, 3_000)
    started = time.perf_counter()
    stream = event_stream(warm_n + timed_n)
    warm, timed = stream[:warm_n], stream[warm_n:]
    texts = pattern_texts(max(sizes))
    points = []
    for n in sizes:
        point = _run_set(texts[:n], warm, timed)
        point.pop("_outputs")
        points.append(point)
        print(f"patterns {n:>8,}: {point['events_per_s']:>9,.0f} events/s", flush=True)
    naive = []
    naive_timed = timed[: 100 if quick else 300]
    for n in naive_sizes:
        point = _run_naive(texts[:n], warm, naive_timed)
        check = _run_set(texts[:n], warm, naive_timed, keep=True)
        if not _same(point.pop("_outputs"), check["_outputs"]):
            raise SystemExit(f"the set and the naive evaluator disagree at {n:,} patterns")
        naive.append(point)
        print(f"naive    {n:>8,}: {1e6 / point['us_per_event']:>9,.1f} events/s", flush=True)
    # The naive cost is linear in the patterns: the fitted cost per pattern, extrapolated.
    per_pattern = statistics.fmean(p["us_per_event"] / p["patterns"] for p in naive)
    for p in points:
        p["naive_us_per_event_extrapolated"] = per_pattern * p["patterns"]
        p["speedup"] = p["naive_us_per_event_extrapolated"] / p["us_per_event"]
    fit = statistics.linear_regression(
        [math.log(p["patterns"]) for p in points], [math.log(p["us_per_event"]) for p in points]
    )
    return {
        "quick": quick,
        "order": list(ORDER),
        "markets": MARKETS,
        "warm_events": warm_n,
        "points": points,
        "naive": naive,
        "naive_us_per_pattern": per_pattern,
        "exponent": fit.slope,
        "seconds": time.perf_counter() - started,
        "load": os.getloadavg()[0],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": machine.cpu_model(),
        "cores": os.cpu_count() or 0,
    }
