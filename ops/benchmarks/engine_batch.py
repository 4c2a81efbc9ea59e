"""An engine batch's fixed cost (issue 35 item 7): after ``ops/benchmarks/alerts.py`` has left
its database (``intersect_bench_alerts``, its subscriptions registered), run

    .venv/bin/python ops/benchmarks/engine_batch.py [--batches 200] [--events 1]

One subscription engine in this process takes every partition, joins every subscription,
then ``--batches`` times: ``--events`` trades appended (one transaction), and the engine
stepped until it has read them. Prints the statements per batch as PostgreSQL counted them
(``pg_stat_statements`` of the bench database, read from another database between batches;
the foreign key checks of the notifications' INSERT among them, one a row), the engine's
CPU and wall time per batch (``time.process_time``, ``time.perf_counter`` around the steps),
then each statement's count per batch. At 50 events a second each event is a batch of its
own, as ``--events 1`` makes it. Compare two commits alternately: the machine is shared.
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
from ops.benchmarks.history import _env
from ops.benchmarks.live import provision


def measure(batches: int, events: int) -> dict[str, object]:
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
    # (ops/services creates the extension in the cluster's postgres database)
    admin = psycopg.connect(provision._with_path(provision.SERVER_URL, "postgres"), autocommit=True)

    def calls() -> dict[str, int]:
        rows = admin.execute(
            "SELECT query, calls FROM pg_stat_statements WHERE dbid = %s", [dbid]
        ).fetchall()
        return {query: int(n) for query, n in rows}

    engine = Engine("engine-batch")
    active = Subscription.objects.filter(state="active").count()
    while engine.step() or len(engine.followed) < active:
        pass
    rng = random.Random(1)
    cpu = wall = 0.0
    sent: dict[str, int] = {}
    for _ in range(batches):
        _append(rng, events)
        before = calls()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        while engine.step():
            pass
        cpu += time.process_time() - cpu0
        wall += time.perf_counter() - wall0
        for query, n in calls().items():
            if n > before.get(query, 0):
                sent[query] = sent.get(query, 0) + n - before.get(query, 0)
    admin.close()
    return {
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
    ap.add_argument("--run", action="store_true", help="(internal) in the bench database")
    args = ap.parse_args()
    if args.run:
        django.setup()
        print(json.dumps(measure(args.batches, args.events), indent=1))
        return 0
    argv = [sys.executable, __file__, "--run", "--batches", str(args.batches)]
    argv += ["--events", str(args.events)]
    env = _env(provision._with_path(provision.SERVER_URL, DATABASE)) | {"LOG_LEVEL": "WARNING"}
    return subprocess.run(argv, cwd=ROOT, env=env | {"PYTHONPATH": str(ROOT)}).returncode


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
