"""The subscription engine's speed (issue 35), a first, short measurement:

    .venv/bin/python ops/benchmarks/subscription_engine.py [--subscriptions N] [--events E]
        [--rate R] [--seconds S] [--without-watches]

In a database of its own (``intersect_bench_engine``, on the cluster of
``BENCH_DATABASE_URL``, else the development cluster, built by the migrations):

* ``N`` live subscriptions (70% form 1, 20% form 3, 10% form 4, over 100 subjects, each
  able to fire; ``--without-watches``: form 1 instead of form 4) registered through the service, timed;
* throughput: ``E`` trades appended, then one engine (in this process, one partition
  set) follows them from the log, every subscription already in its live set: events
  per second and this process's CPU per event, and the process's memory grown per
  subscription once they are all in its set;
* latency: one ``manage.py subscription_engine`` process follows while trades are
  appended at ``R`` a second for ``S`` seconds (each append wakes it through Redis); each
  notification's row time (its commit's transaction time) minus its event's log time,
  p50 and p99.

Prints one JSON line. The machine may be shared: the load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import django

from matching.subscriptions import Subscription as Evaluator
from matching.subscriptions import parse_query, to_text

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ops.benchmarks.history import _env, fresh_database

DATABASE = "intersect_bench_engine"
SUBJECTS = [f"bench.engine.m{i:03d}" for i in range(100)]
TRADES = "FILTER{{type = 'trade' AND subject = '{s}'}}(EVENTS)"
FORM1 = "SELECT price WHERE type = 'trade', subject = '{s}', price > 1.{x:02d}"
FORM3 = (
    "SELECT a.price, b.price FROM " + TRADES + " AS a "
    "NEXT{{b.price > 1.0{k} * a.price}} " + TRADES + " AS b WITHIN 10m"
)
FORM4 = "SELECT MIN(ask) FROM offers WHERE subject = '{s}'"
# Registrations timed through the service (the rest are provisioned in bulk).
REGISTER_SAMPLE = 300
# With BENCH_PROFILE=path, py-spy samples the engine process while it is timed (raw
# stacks at path).
PROFILE = os.environ.get("BENCH_PROFILE", "")
# With BENCH_PROFILE_THROUGHPUT=path, py-spy samples this process while its in-process
# engine follows the appended trades (the CPU-per-event phase; flamegraph-style raw
# stacks at path).
PROFILE_THROUGHPUT = os.environ.get("BENCH_PROFILE_THROUGHPUT", "")


def _rss_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _append(rng: Any, count: int) -> None:
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.db import transaction

    from exchange.services.events import events_append
    from exchange.services.matching import cycle_lock

    rows = [
        (
            "trade",
            rng.choice(SUBJECTS),
            None,
            {"offer": 1, "trade": rng.randrange(10**9), "price": f"{rng.uniform(0.9, 1.6):.2f}"},
        )
        for _ in range(count)
    ]
    with transaction.atomic():
        cycle_lock()
        events_append(closed=rows)


def log_head() -> int:
    """The log's last ``seq``."""
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT last_seq FROM exchange_eventcounter WHERE id = 1")
        (head,) = cursor.fetchone() or (0,)
    return int(head)


def produce(rng: Any, rate: float, seconds: float) -> tuple[int, int]:
    """Trades appended one at a time at ``rate`` a second for ``seconds``: the log's last
    ``seq`` before the first, and how many."""
    head = log_head()
    begun = time.monotonic()
    n = 0
    while time.monotonic() - begun < seconds:
        _append(rng, 1)
        n += 1
        time.sleep(max(0.0, begun + n / rate - time.monotonic()))
    return head, n


def _query(i: int, rng: Any, watches: bool) -> str:
    s = SUBJECTS[i % len(SUBJECTS)]
    kind = i % 10
    if kind < 7 or (kind == 9 and not watches):
        return FORM1.format(s=s, x=rng.randrange(0, 60))
    if kind < 9:
        return FORM3.format(s=s, k=rng.randrange(1, 9))
    return FORM4.format(s=s)


def _provision(owners: list[Any], queries: list[str], first: int) -> None:
    """``queries[first:]`` as active subscriptions registered together, in bulk: the rows
    ``subscription_create`` writes for a query without history (one evaluator state per
    distinct query)."""
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.db import transaction

    from exchange.models import Subscription
    from exchange.services import subscriptions as service

    with transaction.atomic():
        seam, now = service._seam_locked()
        states: dict[str, tuple[str, str, bytes]] = {}
        rows = []
        for i in range(first, len(queries)):
            if queries[i] not in states:
                parsed = parse_query(queries[i])
                evaluator = Evaluator(parsed, now=now, state_limit=service.STATE_LIMIT)
                states[queries[i]] = (
                    parsed.kind.value,
                    to_text(parsed),
                    service.evaluator_dump(evaluator),
                )
            kind, text, state = states[queries[i]]
            rows.append(
                Subscription(
                    owner=owners[i // service.MAX_ACTIVE],
                    kind=kind,
                    query=text,
                    created_at=now,
                    now=now,
                    seam=seam,
                    cursor=seam,
                    evaluator=state,
                )
            )
        Subscription.objects.bulk_create(rows, batch_size=2000)


def _wait_joined(rng: Any, subscriptions: int) -> None:
    """Until the engine process has every subscription in its live set (a joiner joins
    with the first event after it: one is appended every second meanwhile) and has caught
    up with the log (its heartbeat says both)."""
    # Django's: this runs in the --run process, after django.setup() (main)
    from exchange.models import SubscriptionEngineProcess

    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        beat = SubscriptionEngineProcess.objects.filter(name="bench-latency").first()
        if beat is not None and beat.subscriptions >= 0.95 * subscriptions and beat.lag <= 2:
            break
        _append(rng, 1)
        time.sleep(1)
    time.sleep(2)


def run(
    subscriptions: int, events: int, rate: float, seconds: float, watches: bool
) -> dict[str, Any]:
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection

    from exchange.services import subscriptions as service
    from exchange.subscription_engine.engine import Engine

    rng = random.Random(35)
    owners = User.objects.bulk_create(  # no password: they never log in
        User(username=f"bench-engine-{i}") for i in range(-(-subscriptions // service.MAX_ACTIVE))
    )
    queries = [_query(i, rng, watches) for i in range(subscriptions)]
    # A sample registers through the service (timed); the rest are provisioned in bulk as
    # if registered at one instant (one seam and NOW; these queries have no history).
    sample = min(REGISTER_SAMPLE, subscriptions)
    started = time.perf_counter()
    for i in range(sample):
        service.subscription_create(owner=owners[i // service.MAX_ACTIVE], query=queries[i])
    registering = time.perf_counter() - started
    _provision(owners, queries, sample)

    engine = Engine("bench-throughput", lease_seconds=60)
    rss = _rss_kb()
    while engine.step():
        pass
    _append(rng, 1)  # the first live event: every joiner goes into the live set
    while engine.step():
        pass
    per_sub_kb = (_rss_kb() - rss) / max(1, len(engine.followed))
    for _ in range(events // 100):
        _append(rng, 100)
    spy = None
    if PROFILE_THROUGHPUT:
        spy = subprocess.Popen(
            [str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw"]
            + ["-r", "50", "-o", PROFILE_THROUGHPUT, "--pid", str(os.getpid())],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1)  # attached before the timed phase
    started, cpu = time.perf_counter(), time.process_time()
    while engine.step():
        pass
    throughput = events / (time.perf_counter() - started)
    cpu_per_event_ms = 1000 * (time.process_time() - cpu) / events  # this process's CPU
    followed = len(engine.followed)
    if spy is not None:
        spy.send_signal(signal.SIGINT)  # py-spy writes what it sampled and stops
        spy.wait(60)
    engine.stop()

    env = dict(os.environ)  # from here each append wakes the engine (Redis)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "subscription_engine", "--name", "bench-latency"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_joined(rng, subscriptions)  # every subscription read and in its set before timing
        if PROFILE:
            subprocess.Popen(  # py-spy beside the engine, while it is timed
                [str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw"]
                + ["-d", str(int(seconds)), "-o", PROFILE, "--pid", str(process.pid)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        head, n = produce(rng, rate, seconds)
        time.sleep(3)
    finally:
        process.terminate()
        process.wait(600)  # a clean stop checkpoints every evaluator: minutes at 30,000
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP "
            "(ORDER BY extract(epoch FROM n.created_at - e.time)), count(*) "
            "FROM exchange_subscriptionnotification n JOIN exchange_event e ON e.seq = n.seq "
            "WHERE n.seq > %s",
            [head],
        )
        (p50, p99), notes = cursor.fetchone()
    return {
        "subscriptions": subscriptions,
        "watches": watches,
        "followed": followed,
        "registering_per_s": round(sample / registering),
        "events": events,
        "events_per_s": round(throughput),
        "cpu_ms_per_event": round(cpu_per_event_ms, 2),
        "rss_kb_per_subscription": round(per_sub_kb, 1),
        "latency_events": n,
        "latency_rate": rate,
        "latency_notifications": notes,
        "latency_p50_ms": round(1000 * p50, 1),
        "latency_p99_ms": round(1000 * p99, 1),
        "partitions": settings.SUBSCRIPTION_ENGINE_PARTITIONS,
        "load": os.getloadavg()[0],
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subscriptions", type=int, default=10_000)
    ap.add_argument("--events", type=int, default=5_000)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument(
        "--without-watches", action="store_true", help="form 1 instead of form 4 (10%%)"
    )
    ap.add_argument("--run", action="store_true", help="(internal) run in this database")
    args = ap.parse_args()
    sizes = (args.subscriptions, args.events, args.rate, args.seconds, not args.without_watches)
    if args.run:
        django.setup()
        print(json.dumps(run(*sizes)))
        return 0

    url = fresh_database(DATABASE)
    argv = [sys.executable, __file__, "--run", "--subscriptions", str(args.subscriptions)]
    argv += ["--events", str(args.events), "--rate", str(args.rate)]
    argv += ["--seconds", str(args.seconds)]
    argv += ["--without-watches"] if args.without_watches else []
    done = subprocess.run(argv, cwd=ROOT, env=_env(url), capture_output=True, text=True)
    if done.returncode:
        sys.stderr.write(done.stderr)  # the run's traceback
        return done.returncode
    print(done.stdout.strip().splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
