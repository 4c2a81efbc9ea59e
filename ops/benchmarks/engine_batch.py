"""An engine batch's fixed cost (issue 35 item 7): after ``ops/benchmarks/alerts.py`` has left
its database (``intersect_bench_alerts``, its subscriptions registered), run

    .venv/bin/python ops/benchmarks/engine_batch.py [--batches 200] [--events 1]

One subscription engine in this process takes every partition, joins every subscription,
then ``--batches`` times: ``--events`` trades appended (one transaction), and the engine
stepped until it has read them. Prints the statements per batch as PostgreSQL counted them
(``pg_stat_statements`` of the bench database, read from another database between batches;
its default ``track = top``: the check of the notifications' subscriptions, a trigger's query
since migration 0028, runs inside the INSERT and counts in its time; the foreign key's checks
before it ran at the commit, outside any statement, and counted one a row), the engine's CPU
and wall time per batch (``time.process_time``, ``time.perf_counter`` around the steps),
then each statement's count per batch. At 50 events a second each event is a batch of its
own, as ``--events 1`` makes it. Compare two commits alternately: the machine is shared.

    .venv/bin/python ops/benchmarks/engine_batch.py --fanout 500 [--batches 100]

measures the cost that grows with the notifications instead: on a fresh database of its own
(``intersect_bench_fanout``), ``--fanout`` form 1 subscriptions (100 an owner) that each fire
on every trade, so each batch of one trade writes that many notifications; besides the
above, the CPU per notification of the engine (this process) and of its PostgreSQL backend
(``/proc/<pid>/stat`` of ``pg_backend_pid()``: the server is on this machine), and each
statement's execution time per notification (``pg_stat_statements``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ops.benchmarks.alerts import DATABASE
from ops.benchmarks.history import _env, fresh_database
from ops.benchmarks.live import provision

FANOUT_DATABASE = "intersect_bench_fanout"
FANOUT_SUBJECT = "bench.fanout.pencils"


def _fanout_register(count: int) -> None:
    """``count`` form 1 subscriptions that each fire on every trade of ``FANOUT_SUBJECT``."""
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.contrib.auth.models import User

    from exchange.services import subscriptions as service

    query = f"SELECT price WHERE type = 'trade', subject = '{FANOUT_SUBJECT}'"
    owners = User.objects.bulk_create(
        User(username=f"bench-fanout-{i}") for i in range((count + 99) // 100)
    )
    for i, owner in enumerate(owners):
        service.subscriptions_create_many(owner=owner, queries=[query] * min(100, count - 100 * i))


def _append_fanout(count: int) -> None:
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.db import transaction

    from exchange.services.events import events_append
    from exchange.services.matching import cycle_lock

    rows = [("trade", FANOUT_SUBJECT, None, {"offer": 1, "trade": 1, "price": "1.10"})] * count
    with transaction.atomic():
        cycle_lock()
        events_append(closed=rows)


def _cpu_seconds(pid: int) -> float:
    """A local process's user and system CPU (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(batches: int, events: int, fanout: int = 0) -> dict[str, object]:
    # Django's: this runs in the --run process, after django.setup() (main)
    import psycopg
    from django.db import connection

    from exchange.models import Subscription
    from exchange.subscription_engine.engine import Engine
    from ops.benchmarks.subscription_engine import _append

    with connection.cursor() as cursor:  # what the alerts run's engines left
        cursor.execute("UPDATE exchange_subscriptionpartition SET owner = '', expires_at = NULL")
        cursor.execute("DELETE FROM exchange_subscriptionengineprocess")
        cursor.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        (dbid,) = cursor.fetchone() or (0,)
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone() or (0,)
    # (ops/services creates the extension in the cluster's postgres database)
    admin = psycopg.connect(provision._with_path(provision.SERVER_URL, "postgres"), autocommit=True)

    def calls() -> dict[str, int]:
        rows = admin.execute(
            "SELECT query, calls FROM pg_stat_statements WHERE dbid = %s", [dbid]
        ).fetchall()
        return {query: int(n) for query, n in rows}

    def exec_ms() -> dict[str, float]:
        rows = admin.execute(
            "SELECT query, total_exec_time FROM pg_stat_statements WHERE dbid = %s", [dbid]
        ).fetchall()
        return {query: float(ms) for query, ms in rows}

    engine = Engine("engine-batch")
    active = Subscription.objects.filter(state="active").count()
    while engine.step() or len(engine.followed) < active:
        pass
    rng = random.Random(1)
    cpu = wall = server = 0.0
    sent: dict[str, int] = {}
    spent: dict[str, float] = {}
    for _ in range(batches):
        if fanout:
            _append_fanout(events)
        else:
            _append(rng, events)
        before, before_ms = calls(), exec_ms()
        cpu0, wall0, server0 = time.process_time(), time.perf_counter(), _cpu_seconds(backend)
        while engine.step():
            pass
        cpu += time.process_time() - cpu0
        wall += time.perf_counter() - wall0
        server += _cpu_seconds(backend) - server0
        for query, n in calls().items():
            if n > before.get(query, 0):
                sent[query] = sent.get(query, 0) + n - before.get(query, 0)
        for query, ms in exec_ms().items():
            if ms > before_ms.get(query, 0.0):
                spent[query] = spent.get(query, 0.0) + ms - before_ms.get(query, 0.0)
    admin.close()
    notes = max(1, fanout * events * batches)
    fanned = {
        "notifications_per_batch": fanout * events,
        "engine_cpu_us_per_notification": round(1e6 * cpu / notes, 2),
        "backend_cpu_us_per_notification": round(1e6 * server / notes, 2),
        "exec_us_per_notification": {
            " ".join(q.split())[:120]: round(1000 * ms / notes, 2)
            for q, ms in sorted(spent.items(), key=lambda x: -x[1])[:8]
        },
    }
    return {
        **(fanned if fanout else {}),
        "subscriptions": active,
        "batches": batches,
        "events_per_batch": events,
        "statements_per_batch": round(sum(sent.values()) / batches, 2),
        "cpu_ms_per_batch": round(1000 * cpu / batches, 2),
        "wall_ms_per_batch": round(1000 * wall / batches, 2),
        "statements": {
            " ".join(q.split())[:120]: round(n / batches, 2)
            for q, n in sorted(sent.items(), key=lambda x: -x[1])
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--events", type=int, default=1, help="trades appended a batch")
    ap.add_argument(
        "--fanout", type=int, default=0, help="subscriptions each trade notifies (own database)"
    )
    ap.add_argument("--run", action="store_true", help="(internal) in the bench database")
    args = ap.parse_args()
    if args.run:
        django.setup()
        if args.fanout:
            _fanout_register(args.fanout)
        print(json.dumps(measure(args.batches, args.events, args.fanout), indent=1))
        return 0
    argv = [sys.executable, __file__, "--run", "--batches", str(args.batches)]
    argv += ["--events", str(args.events), "--fanout", str(args.fanout)]
    if args.fanout:
        url = fresh_database(FANOUT_DATABASE)
    else:
        url = provision._with_path(provision.SERVER_URL, DATABASE)
    env = _env(url) | {"LOG_LEVEL": "WARNING"}
    return subprocess.run(argv, cwd=ROOT, env=env | {"PYTHONPATH": str(ROOT)}).returncode


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
