"""What many live subscriptions on one market cost the exchange (SPEC 8.3, issue 19's
speed): 10,000 live atomic subscriptions on the bench book's market, and the matching
cycle timed with them active and without, the subscription engine's batches that feed them
each cycle's events timed beside it (an ``Engine`` in this process, stepped after each
cycle; ``manage.py subscription_engine`` runs the same in its own process, on the same
cores).

    ops/bench --subscriptions-only [--quick]    this benchmark alone (``--quick``: 1,000
                                                subscriptions, 4 cycles); its section of
                                                docs/benchmarks.md (or DIR/benchmarks.md
                                                with --out DIR) replaced

It runs in a database of its own, ``intersect_bench_subscriptions``, on the cluster of
``BENCH_DATABASE_URL`` (else the development cluster), built by the product's migrations,
with the book of ``manage.py bench_book`` (2,000 offers and 6,000 bids; quick: 200 and
600). Subscriptions are registered through the service, 100 a user (the API's limit), with
four kinds of query on the market (trades above a price, best offers above a value, offers
posted at or below an ask, the owner's own bids: none, since the owners place no bids).
Each cycle places 40 bids and 10 offers through the services, then runs; in every other
cycle the subscriptions are set aside (``done``) so that the cycle runs without them, and
put back before the engine's batches. The machine may be shared: the load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
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
from ops.benchmarks.history import _env, fresh_database, load_bench_book

DATABASE = "intersect_bench_subscriptions"
FULL = {"subscriptions": 10_000, "cycles": 6, "offers": 2_000, "bids": 6_000}
QUICK = {"subscriptions": 1_000, "cycles": 4, "offers": 200, "bids": 600}
QUERIES = (
    "SELECT price WHERE type = 'trade', subject = '{s}', price > 1.{x:02d}",
    "SELECT offer, value WHERE type = 'best_offer', subject = '{s}', value >= 1.{x:02d}",
    "SELECT offer, ask WHERE type = 'offer_posted', subject = '{s}', ask <= 1.{x:02d}",
    "SELECT bid, limit WHERE type = 'bid_placed', subject = '{s}'",
)


def _load() -> float:
    return os.getloadavg()[0]


def provision_book(size: dict[str, int]) -> str:
    """A fresh bench database holding the bench book; returns its URL."""
    url = fresh_database(DATABASE)
    load_bench_book(url, offers=size["offers"], bids=size["bids"])
    return url


class Timed:
    """Wraps a function of a module to add up the seconds spent in it."""

    def __init__(self, module: Any, name: str) -> None:
        self.seconds = 0.0
        original = getattr(module, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        setattr(module, name, timed)

    def take(self) -> float:
        seconds, self.seconds = self.seconds, 0.0
        return seconds


def run(size: dict[str, int]) -> dict[str, Any]:
    """Register the subscriptions, then the cycles and the engine's batches (in the bench
    database's settings, this process)."""
    # Django's: this runs in main()'s subprocess, after django.setup()
    from django.contrib.auth.models import User
    from django.db import connection

    from exchange.management.commands.bench_book import BENCH_SPENDING_LIMIT, SUBJECT
    from exchange.models import Market, Offer, SpendingLimit, Subscription, SubscriptionNotification
    from exchange.services import events as event_service
    from exchange.services import matching, orders
    from exchange.services import subscriptions as service
    from exchange.subscription_engine import engine as engine_module

    orders.matching_cycle_request = lambda market_id: None  # the cycles run here
    asked = []
    service.subscriptions_advance_request = lambda: asked.append(1)
    event_service.subscriptions_advance_request = lambda: asked.append(1)
    rng = random.Random(19)
    market = Market.objects.get(subject=SUBJECT)
    seller = User.objects.create_user("bench-subs-seller", password="bench-pass-1")
    buyer = User.objects.create_user("bench-subs-buyer", password="bench-pass-1")
    SpendingLimit.objects.create(user=buyer, amount=BENCH_SPENDING_LIMIT)
    offers = Offer.objects.count()
    # Two cycles before anyone subscribes: the first with orders logs the book's best
    # offers (an event per offer), which no live subscription should be timed on.
    for n in (-2, -1):
        _orders(orders, market, seller, buyer, rng, offers, n)
        matching.matching_cycle_run()
    load = _load()
    started = time.perf_counter()
    owners = [
        User.objects.create_user(f"bench-subs-{i}", password="bench-pass-1")
        for i in range(-(-size["subscriptions"] // service.MAX_ACTIVE))
    ]
    for i in range(size["subscriptions"]):
        query = QUERIES[i % len(QUERIES)].format(s=SUBJECT, x=rng.randrange(0, 50))
        service.subscription_create(owner=owners[i // service.MAX_ACTIVE], query=query)
    registering = time.perf_counter() - started
    engine = engine_module.Engine("bench-subscriptions")
    _drain(engine)  # nothing yet: all at the seam; every evaluator read into the set
    timers = {
        name: Timed(engine_module, name)
        for name in ("_read", "advance_members", "_state_load", "evaluator_dump", "_write")
    }
    cycles: dict[str, list[float]] = {"with": [], "without": []}
    passes = []
    for n in range(size["cycles"]):
        _orders(orders, market, seller, buyer, rng, offers, n)
        on = n % 2 == 0
        if not on:
            Subscription.objects.filter(state="active").update(state="done")
        head = _log_end(connection)
        begun = time.perf_counter()
        matching.matching_cycle_run()
        cycles["with" if on else "without"].append(1000 * (time.perf_counter() - begun))
        if not on:
            Subscription.objects.filter(state="done", reason="").update(state="active")
        notes = SubscriptionNotification.objects.count()
        begun = time.perf_counter()
        batches = _drain(engine)
        seconds = time.perf_counter() - begun
        parts = {name: round(1000 * t.take(), 1) for name, t in timers.items()}
        passes.append(
            {
                "ms": round(1000 * seconds, 1),
                "events": _log_end(connection) - head,
                "notifications": SubscriptionNotification.objects.count() - notes,
                "batches": batches,
                **parts,
            }
        )
    engine.stop()
    median = {k: statistics.median(v) for k, v in cycles.items()}
    return {
        "subscriptions": size["subscriptions"],
        "owners": len(owners),
        "registering_s": round(registering, 1),
        "cycles": size["cycles"],
        "ms_with": round(median["with"], 1),
        "ms_without": round(median["without"], 1),
        "passes": passes,
        "pass_ms": round(statistics.median(p["ms"] for p in passes), 1),
        "load_before": load,
        "load_after": _load(),
    }


def _orders(
    orders: Any, market: Any, seller: Any, buyer: Any, rng: Any, offers: int, n: int
) -> None:
    """Cycle ``n``'s orders: 10 offers (each its own hundred of lots) and 40 bids."""
    # Django's: this runs in main()'s subprocess, after django.setup()
    from exchange.management.commands.bench_book import bid_text, offer_text

    for i in range(10):
        orders.offer_publish(
            seller=seller, market=market, constraint=offer_text(offers + 20 + n * 10 + i)
        )
    for _ in range(40):
        orders.bid_place(buyer=buyer, market=market, constraint=bid_text(rng, offers))


def _drain(engine: Any) -> int:
    """The engine's batches until it has read the log; how many."""
    batches = 1
    engine.changed = True  # the registrations' wake-up
    while engine.step():
        batches += 1
    return batches


def _log_end(connection: Any) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_seq FROM exchange_eventcounter WHERE id = 1")
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def measure(quick: bool = False) -> dict[str, Any]:
    size = QUICK if quick else FULL
    started = time.perf_counter()
    url = provision_book(size)
    done = subprocess.run(
        [sys.executable, __file__, "--run", json.dumps(size)],
        cwd=ROOT,
        env=_env(url),
        check=True,
        capture_output=True,
        text=True,
    )
    return (
        machine.host()
        | {"quick": quick}
        | json.loads(done.stdout.strip().splitlines()[-1])
        | {"book": {"offers": size["offers"], "bids": size["bids"]}}
        | {"seconds": round(time.perf_counter() - started)}
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", help="(internal) the size as JSON: run here, print JSON")
    args = ap.parse_args()
    if not args.run:
        return 2

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exchange.settings.development")
    django.setup()
    print(json.dumps(run(json.loads(args.run))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
