"""The matching stage's capacity with one and with two matching workers (SPEC 9, "Scale-out").

    ops/bench scaleout [--quick]    prints a table and the raw JSON (test-artifacts/bench/
                                    scaleout.json); docs/benchmarks.md quotes it by hand

A book of four markets (consecutive ids, so two in each of two partitions) is built in a
database of its own, ``intersect_bench_scaleout`` (``BENCH_DATABASE_URL``'s cluster, else
the development cluster), through the services: per market 100 offers and 400 bids (quick:
25 and 100), matched. Then, for each setting in turn (one worker, two workers, repeated), 60
new bids a market (quick: 15) are written without a trigger and the workers drain them: a
worker is a process of its own that runs ``matching_cycle_run`` for its partitions in turn, as
the Celery task does, each cycle taking at most ``--batch`` changes (4 by default: the
batches of the live bench at 50 bids/s are a few changes), until nothing of its partitions
is pending. One worker takes both partitions; two take one each. Capacity is cycles and
changes per second of wall time from the start of the workers to the end of the last. The
Celery dispatch around the cycles is left out (it is the same per cycle in both settings).

The machine may be shared and has few cores: the load average is recorded, and two workers
can at most use two cores, shared with PostgreSQL, which runs every statement of both.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import django

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ops.benchmarks import machine
from ops.benchmarks.history import _env, fresh_database

DATABASE = "intersect_bench_scaleout"
FULL = {"markets": 4, "offers": 100, "bids": 400, "changes": 60, "repeats": 2}
QUICK = {"markets": 4, "offers": 25, "bids": 100, "changes": 15, "repeats": 1}
PARTITIONS = 2


def _book(size: dict[str, int], rng: Any) -> dict[str, Any]:
    """The markets and their matched book; returns what the settings need."""
    # Django's: this runs in the benchmark's subprocess, after django.setup()
    from django.contrib.auth.models import User

    from exchange.management.commands.bench_book import SCHEMA
    from exchange.models import SpendingLimit
    from exchange.services import matching, orders
    from exchange.services.markets import market_create

    markets = [
        market_create(
            subject=f"bench.scaleout.m{i}", title=f"Market {i}", schema=SCHEMA, tick="0.01"
        )
        for i in range(size["markets"])
    ]
    seller = User.objects.create_user("scaleout-seller", password="bench-pass-1")
    buyer = User.objects.create_user("scaleout-buyer", password="bench-pass-1")
    SpendingLimit.objects.create(user=buyer, amount=10**12)
    for market in markets:
        for _ in range(size["offers"]):
            low = rng.randint(1, 950)
            orders.offer_publish(
                seller=seller,
                market=market,
                constraint=f"lot BETWEEN {low} AND {low + 49} AND price >= 1.00",
            )
        for _ in range(size["bids"]):
            _bid(orders, market, buyer, rng)
    while matching.matching_cycle_run().changes:
        pass
    return {"markets": markets, "buyer": buyer}


def _bid(orders: Any, market: Any, buyer: Any, rng: Any) -> None:
    price = f"{1 + rng.randint(0, 99) / 100:.2f}"
    orders.bid_place(
        buyer=buyer, market=market, constraint=f"lot = {rng.randint(1, 999)} AND price <= {price}"
    )


def _worker(partitions: list[int], batch: int, barrier: Any, out: Any) -> None:
    """One matching worker (a process of its own, started fresh): cycles of its partitions
    in turn until none takes a change."""
    django.setup()
    # Django's: importable only after the setup above, in this fresh process
    from django.db import connections

    from exchange.services import matching
    from exchange.services.matching import matching_cycle_run

    # What the worker waits for the tail lock (where parallel cycles meet) is measured.
    waited = [0.0]
    tail_lock = matching.tail_lock

    def timed_tail_lock() -> None:
        begun = time.perf_counter()
        tail_lock()
        waited[0] += time.perf_counter() - begun

    matching.tail_lock = timed_tail_lock
    barrier.wait()
    started = time.perf_counter()
    cpu = time.process_time()
    cycles = changes = 0
    busy = set(partitions)
    try:
        while busy:
            for partition in sorted(busy):
                taken = matching_cycle_run(
                    limit=batch, partition=partition, partitions=PARTITIONS
                ).changes
                if taken:
                    cycles, changes = cycles + 1, changes + taken
                else:
                    busy.discard(partition)
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        out.put({"error": f"{type(exc).__name__}: {exc}"})
        raise
    out.put(
        {
            "cycles": cycles,
            "changes": changes,
            "seconds": time.perf_counter() - started,
            "python_cpu_seconds": time.process_time() - cpu,
            "tail_wait_seconds": waited[0],
        }
    )
    connections.close_all()


def _setting(
    workers: int, book: dict[str, Any], size: dict[str, int], batch: int, rng: Any
) -> dict[str, Any]:
    # Django's: this runs in the benchmark's subprocess, after django.setup()
    from exchange.services import orders

    for market in book["markets"]:
        for _ in range(size["changes"]):
            _bid(orders, market, book["buyer"], rng)
    split = [[0, 1]] if workers == 1 else [[0], [1]]
    # Spawned, not forked: a forked child would share this process's pooled connections.
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(workers + 1)
    out = context.Queue()
    procs = [context.Process(target=_worker, args=(p, batch, barrier, out)) for p in split]
    for proc in procs:
        proc.start()
    load = os.getloadavg()[0]
    barrier.wait()
    started = time.perf_counter()
    results = [out.get(timeout=600) for _ in procs]
    wall = time.perf_counter() - started
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        raise RuntimeError(f"a matching worker failed: {errors}")
    for proc in procs:
        proc.join(timeout=60)
    cycles = sum(r["cycles"] for r in results)
    changes = sum(r["changes"] for r in results)
    assert changes == size["changes"] * size["markets"], (changes, results)
    return {
        "workers": workers,
        "cycles": cycles,
        "changes": changes,
        "seconds": round(wall, 3),
        "cycles_per_second": round(cycles / wall, 1),
        "changes_per_second": round(changes / wall, 1),
        "per_worker": results,
        "load_average": load,
    }


def run(size: dict[str, int], batch: int) -> dict[str, Any]:
    # Django's: this runs in the benchmark's subprocess, after django.setup()
    from exchange.services import events as event_service
    from exchange.services import orders
    from exchange.services import subscriptions as subscription_service
    from exchange.services.verification import best_offers_verify

    orders.matching_cycle_request = lambda market_id: None  # the workers here run the cycles
    event_service.subscriptions_advance_request = lambda: None
    subscription_service.subscriptions_advance_request = lambda: None
    rng = random.Random(9)
    book = _book(size, rng)
    assert [m.pk % PARTITIONS for m in book["markets"]][:2] in ([0, 1], [1, 0])
    settings = []
    for _ in range(size["repeats"]):
        for workers in (1, 2):
            settings.append(_setting(workers, book, size, batch, rng))
    verified = best_offers_verify()
    return {"settings": settings, "batch": batch, "verify_clean": verified.clean}


def measure(quick: bool = False, batch: int = 4) -> dict[str, Any]:
    size = QUICK if quick else FULL
    started = time.perf_counter()
    url = fresh_database(DATABASE)
    done = subprocess.run(
        [sys.executable, __file__, "--run", json.dumps(size), "--batch", str(batch)],
        cwd=ROOT,
        env=_env(url),
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return (
        machine.host()
        | {"quick": quick, "book": size}
        | json.loads(done.stdout.strip().splitlines()[-1])
        | {"seconds": round(time.perf_counter() - started)}
    )


def table(result: dict[str, Any]) -> str:
    lines = [
        "| matching workers | cycles | changes | seconds | cycles/s | changes/s "
        "| workers' Python CPU s | waited for the tail lock s | load average |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in result["settings"]:
        cpu = sum(w["python_cpu_seconds"] for w in s["per_worker"])
        wait = sum(w["tail_wait_seconds"] for w in s["per_worker"])
        lines.append(
            f"| {s['workers']} | {s['cycles']} | {s['changes']} | {s['seconds']:.2f} | "
            f"{s['cycles_per_second']} | {s['changes_per_second']} | {cpu:.2f} | {wait:.2f} | "
            f"{s['load_average']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="ops/bench scaleout", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, default=4, help="changes a cycle takes at most")
    ap.add_argument("--run", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.run:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exchange.settings.development")
        django.setup()
        print(json.dumps(run(json.loads(args.run), args.batch)))
        return 0
    result = measure(quick=args.quick, batch=args.batch)
    raw = ROOT / "test-artifacts" / "bench" / "scaleout.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{result['date']}, {result['cpu']} ({result['cores']} cores), commit {result['commit']}")
    print(f"batch {result['batch']}, book {result['book']}, verify clean: {result['verify_clean']}")
    print(table(result))
    print(f"raw results: {raw}")
    return 0 if result["verify_clean"] else 1


if __name__ == "__main__":
    sys.exit(main())
