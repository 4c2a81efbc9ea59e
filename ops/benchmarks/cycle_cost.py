#!/usr/bin/env python3
"""The matching worker's CPU in ``best_offers_refresh`` (issue 36, "the cycle's cost"): per
call over ``--changed`` offers whose best bid changed, in this process, with its rows and
the digest of what it wrote, so that two commits can be compared for cost and sameness.

    .venv/bin/python ops/benchmarks/cycle_cost.py [--build] [--changed 50] [--cycles 40]
        [--profile 25]

``--build`` (needed once) makes the database ``intersect_cycle_cost`` on the test profile's
cluster (``BENCH_DATABASE_URL`` names another) with the product's migrations and the bench
book of ``--offers`` offers and ``--bids`` bids (``manage.py bench_book``, seed 1). Each
cycle then, in a transaction rolled back at its end so that every cycle starts from the same
book, moves the best bid of ``--changed`` offers that have two matches or more, in three
ways taken in turn (the best match deleted: the former best no longer matches; the second
raised above the best: outbid; every match deleted: no best bid any more), and times
``best_offers_refresh`` over them with ``time.process_time`` (this process's CPU, not the
database's). Prints one JSON object: the CPU per call (median, mean, min, in ms), the
notifications per call, the load average, and a digest of every row the calls wrote and of
the notifications they returned (ids taken relative to the call's first), which must not
change between commits that change only the cost. ``--profile N`` runs the calls under
cProfile (timed by this process's CPU) and prints its top ``N`` functions by own time and by
cumulative time instead.

    .venv/bin/python ops/benchmarks/cycle_cost.py --whole-cycle [--sizes 1,10] [--rounds 40]
        [--profile 25]

measures the whole of what the matching worker does for a change instead (issues 35 and 36:
its fixed cost per cycle): on a fresh copy of the built book (``intersect_cycle_cost_run``,
made from it as a template, so that cycles commit and every run starts from the same book),
each round places ``--sizes`` bids in turn through ``bid_place`` (1, then 10, then 1, ... so
that the machine's noise falls on every size alike), then runs the matching task as the
worker runs it (Celery's tracer, built once; ``matching_cycle`` loops until no change is
pending: the cycle that takes the bids, then the empty ones that find none), commits and
after-commit pushes included. Prints, per size, the CPU per task and per cycle that took
the bids (median, mean, min, in ms), the statements per task as PostgreSQL counted them
(``pg_stat_statements`` of the run's database, read between rounds: ``BEGIN``, ``COMMIT``
and savepoints included, and the store's statements, which go past Django's cursor), each
statement's count per task with ``--statements``, PostgreSQL's own CPU per task (the client
backends of the run's database, read from ``/proc``: see ``BackendCpu``; with how many
backends each task used), the load average, and a digest of what the rounds wrote (best
offers, their history, notifications, events, matches; timestamps left out), which must not
change between commits that change only the cost. To compare two commits, run this script
from a checkout of each, alternately, several times.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import django
import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from exchange.settings.ports import TEST_DATABASE_URL, TEST_REDIS_URL

# The test profile's services unless the caller names others (read by ``provision``).
os.environ.setdefault("BENCH_DATABASE_URL", TEST_DATABASE_URL)
os.environ.setdefault("BENCH_REDIS_URL", TEST_REDIS_URL)

from ops.benchmarks import machine
from ops.benchmarks.history import _env, fresh_database, load_bench_book
from ops.benchmarks.live import provision

DATABASE = "intersect_cycle_cost"
WARM = 3

# The offers of the book with two matches or more, in id order.
CANDIDATES = """
SELECT offer_id FROM exchange_offerbidmatch GROUP BY offer_id HAVING count(*) >= 2
ORDER BY offer_id
"""

# Move the best bid of the given offers (%s three times: the offers whose best match goes,
# whose second match is raised above the best, whose matches all go). The best is the
# cycle's (``best_bids``): highest value, then the earlier bid, then the lower id.
MOVE = """
WITH ranked AS (
    SELECT m.id, m.offer_id, m.value,
           row_number() OVER (PARTITION BY m.offer_id
                              ORDER BY m.value DESC, b.priority_at, b.id) AS place,
           max(m.value) OVER (PARTITION BY m.offer_id) AS top
    FROM exchange_offerbidmatch m JOIN exchange_bid b ON b.id = m.bid_id
    WHERE m.offer_id = ANY(%s) OR m.offer_id = ANY(%s) OR m.offer_id = ANY(%s)
), raised AS (
    UPDATE exchange_offerbidmatch m SET value = r.top + 0.01 FROM ranked r
    WHERE m.id = r.id AND r.place = 2 AND r.offer_id = ANY(%s)
)
DELETE FROM exchange_offerbidmatch m USING ranked r
WHERE m.id = r.id AND ((r.place = 1 AND r.offer_id = ANY(%s)) OR r.offer_id = ANY(%s))
"""

# What a call wrote, ids relative to the first of the call (timestamps left out: they differ
# from run to run).
WRITTEN = """
SELECT json_build_object(
  'notes', (SELECT coalesce(json_agg(json_build_array(id - %s, recipient_id, market_id,
                offer_id, type, data, delivered_at IS NULL, created_at >= %s) ORDER BY id), '[]')
            FROM exchange_notification WHERE id > %s),
  'history', (SELECT coalesce(json_agg(json_build_array(id - %s, offer_id, bid_id, value,
                matching_bids, at = %s) ORDER BY id), '[]')
              FROM exchange_bestofferchange WHERE id > %s),
  'best', (SELECT coalesce(json_agg(json_build_array(offer_id, bid_id, value, matching_bids)
               ORDER BY offer_id), '[]')
           FROM exchange_bestoffer WHERE offer_id = ANY(%s)))::text
"""


def _last_ids() -> tuple[int, int]:
    # Django's: main() calls django.setup() first.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(max(id), 0) FROM exchange_notification),"
            " (SELECT coalesce(max(id), 0) FROM exchange_bestofferchange)"
        )
        notes, history = cursor.fetchone()
    return notes, history


def one_call(offers: list[int], digest: Any, profile: cProfile.Profile | None) -> tuple[float, int]:
    """Move the best bids of ``offers``, time ``best_offers_refresh`` over them, add what it
    wrote and returned to ``digest``, and roll it all back; returns (CPU s, notifications)."""
    # Django's: main() calls django.setup() first.
    from django.db import connection, transaction
    from django.utils import timezone

    from exchange.services.matching import best_offers_refresh

    thirds = [offers[0::3], offers[1::3], offers[2::3]]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(MOVE, [*thirds, thirds[1], thirds[0], thirds[2]])
        notes_before, history_before = _last_ids()
        started = timezone.now()
        if profile is not None:
            profile.enable()
        cpu = time.process_time()
        notes = best_offers_refresh(offer_ids=set(offers))
        cpu = time.process_time() - cpu
        if profile is not None:
            profile.disable()
        first = notes[0].pk - 1 if notes else notes_before
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT max(at) FROM exchange_bestofferchange WHERE id > %s", [history_before]
            )
            (at,) = cursor.fetchone()
            cursor.execute(
                "SELECT min(id) - 1 FROM exchange_bestofferchange WHERE id > %s", [history_before]
            )
            (first_history,) = cursor.fetchone()
            cursor.execute(
                WRITTEN,
                [first, started, notes_before, first_history, at, history_before, offers],
            )
            (written,) = cursor.fetchone()
        digest.update(written.encode())
        returned = [
            [n.pk - first, n.recipient_id, n.market.subject, n.offer_id, n.type, n.data]
            for n in notes
        ]
        digest.update(json.dumps(returned, sort_keys=True).encode())
        transaction.set_rollback(True)
    return cpu, len(notes)


# --whole-cycle: the copy of the built book the rounds commit into.
RUN_DATABASE = "intersect_cycle_cost_run"
# The book's marks, from which the digest of what the rounds wrote starts.
MARKS = """
SELECT (SELECT coalesce(max(id), 0) FROM exchange_notification),
       (SELECT coalesce(max(id), 0) FROM exchange_bestofferchange),
       (SELECT coalesce(max(seq), 0) FROM exchange_event),
       (SELECT coalesce(max(id), 0) FROM exchange_bid)
"""
# What the rounds wrote past the marks, and the best-offer table (timestamps left out).
WHOLE_WRITTEN = """
SELECT json_build_object(
  'notes', (SELECT coalesce(json_agg(json_build_array(id, recipient_id, market_id, offer_id,
                type, data, delivered_at IS NULL) ORDER BY id), '[]')
            FROM exchange_notification WHERE id > %s),
  'history', (SELECT coalesce(json_agg(json_build_array(id, offer_id, bid_id, value,
                matching_bids) ORDER BY id), '[]')
              FROM exchange_bestofferchange WHERE id > %s),
  'events', (SELECT coalesce(json_agg(json_build_array(seq, type, subject, owner_id, data)
                ORDER BY seq), '[]')
             FROM exchange_event WHERE seq > %s),
  'matches', (SELECT coalesce(json_agg(json_build_array(offer_id, bid_id, value, pub_disjunct,
                sub_disjunct) ORDER BY offer_id, bid_id), '[]')
              FROM exchange_offerbidmatch WHERE bid_id > %s),
  'best', (SELECT coalesce(json_agg(json_build_array(offer_id, bid_id, value, matching_bids)
               ORDER BY offer_id), '[]')
           FROM exchange_bestoffer))::text
"""


def run_copy() -> str:
    """A fresh copy of the built book (``CREATE DATABASE ... TEMPLATE``); its URL."""
    provision.cluster_check()
    with psycopg.connect(provision.SERVER_URL, autocommit=True) as conn:
        run, book = sql.Identifier(RUN_DATABASE), sql.Identifier(DATABASE)
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(run))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(run, book))
    return provision._with_path(provision.SERVER_URL, RUN_DATABASE)


def _ms(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 2),
        "mean": round(statistics.fmean(values), 2),
        "min": round(min(values), 2),
    }


class Statements:
    """Statements PostgreSQL ran in this process's database (``pg_stat_statements``, whose
    view ``ops/services`` creates in the cluster's ``postgres`` database), by text."""

    def __init__(self) -> None:
        # Django's: main() calls django.setup() first.
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
            (self.dbid,) = cursor.fetchone()
        url = provision._with_path(provision.SERVER_URL, "postgres")
        self.admin = psycopg.connect(url, autocommit=True)

    def counts(self) -> dict[str, int]:
        rows = self.admin.execute(
            "SELECT query, calls FROM pg_stat_statements WHERE dbid = %s", [self.dbid]
        ).fetchall()
        # Added up by their first 100 characters: the ORM's ``IN`` lists of each length are
        # statements of their own to PostgreSQL, and the savepoints' names differ.
        counts: dict[str, int] = {}
        for query, n in rows:
            key = " ".join(query.split())[:100]
            counts[key] = counts.get(key, 0) + int(n)
        return counts


class BackendCpu:
    """PostgreSQL's CPU in the client backends of this process's database, read from
    ``/proc`` (the cluster runs on this machine). The task's connection comes from Django's
    pool, so that one round may use another backend than the last: every client backend of
    the database is read, before and after, and the pids whose CPU moved are reported. The
    caller's ``bid_place`` runs before the first reading, the admin connection that reads
    sits in another database, and autovacuum's workers are not client backends. Read from
    ``/proc/<pid>/schedstat`` (nanoseconds on the CPU) where the kernel has it, else from
    ``/proc/<pid>/stat`` (user and system time, in ticks of 10 ms: only the mean of many
    rounds means anything then)."""

    def __init__(self, statements: Statements) -> None:
        self.admin = statements.admin
        self.dbid = statements.dbid
        self.precise = Path(f"/proc/{os.getpid()}/schedstat").exists()

    def _cpu(self, pid: int) -> float | None:
        """The backend's CPU so far, in seconds; None if it has gone."""
        try:
            if self.precise:
                return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
            # The fields after the command's closing parenthesis: utime and stime are the
            # 12th and 13th (the command may hold spaces).
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (FileNotFoundError, ProcessLookupError):
            return None

    def read(self) -> dict[int, float]:
        rows = self.admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datid = %s AND backend_type = 'client backend'",
            [self.dbid],
        ).fetchall()
        cpus = {pid: self._cpu(pid) for (pid,) in rows}
        return {pid: cpu for pid, cpu in cpus.items() if cpu is not None}

    @staticmethod
    def spent(before: dict[int, float], after: dict[int, float]) -> tuple[float, list[int]]:
        """The CPU the backends spent between two readings (a backend born between them
        counts from its start), and the pids that spent any."""
        moved = {pid: cpu - before.get(pid, 0.0) for pid, cpu in after.items()}
        moved = {pid: cpu for pid, cpu in moved.items() if cpu > 0}
        return sum(moved.values()), sorted(moved)


def whole_cycles(sizes: list[int], rounds: int, profile: cProfile.Profile | None) -> dict[str, Any]:
    """``--whole-cycle``'s rounds (see the module's docstring); their figures by size."""
    # Django's: main() calls django.setup() first. The worker's app, for its signal
    # handlers (the connection given back to the pool after each task).
    from celery.app.trace import build_tracer
    from django.contrib.auth.models import User
    from django.db import connection

    from exchange import tasks
    from exchange.celery import app
    from exchange.collector import collector_settle
    from exchange.management.commands.bench_book import BENCH_SPENDING_LIMIT, SUBJECT, bid_text
    from exchange.models import Market, Offer, SpendingLimit
    from exchange.services import orders

    collector_settle()  # as the matching worker's pool process does at its start
    orders.matching_cycle_request = lambda market_id: None  # the task runs here, in turn
    market = Market.objects.get(subject=SUBJECT)
    buyer = User.objects.create_user("cycle-cost-buyer", password="bench-pass-1")
    SpendingLimit.objects.create(user=buyer, amount=BENCH_SPENDING_LIMIT)
    offers = Offer.objects.count()
    rng = random.Random(7)

    # Each cycle's CPU, with the changes it took: the task calls it through its module.
    cycles: list[tuple[float, int]] = []
    cycle_run = tasks.matching_cycle_run

    def timed_cycle(**kwargs: Any) -> Any:
        started = time.process_time()
        report = cycle_run(**kwargs)
        cycles.append((time.process_time() - started, report.changes))
        return report

    tasks.matching_cycle_run = timed_cycle
    task = tasks.matching_cycle
    # Built once, as the worker builds it for each task; run as a message of the queue.
    trace = build_tracer(task.name, task, app=app, propagate=True)
    partitions = tasks.partitions()
    partition = tasks.market_partition(market.pk, partitions)

    def run_task() -> None:
        task_id = str(uuid.uuid4())
        request = {
            "id": task_id,
            "task": task.name,
            "hostname": "cycle-cost",
            "delivery_info": {"routing_key": tasks.matching_queue(partition)},
        }
        trace(task_id, (partition, partitions), {}, request)

    task_call(run_task)  # the book's first cycle, not counted (nothing pending, normally)
    with connection.cursor() as cursor:
        cursor.execute(MARKS)
        marks = cursor.fetchone()
    statements = Statements()
    backends = BackendCpu(statements)
    figures: dict[int, dict[str, list[float]]] = {
        size: {"task": [], "cycle": [], "empty": [], "statements": [], "backend": []}
        for size in sizes
    }
    # How many backends spent CPU in a task, counted over the rounds: 1 when the task kept
    # to one connection of the pool.
    spread: dict[int, int] = {}
    sent: dict[int, dict[str, int]] = {size: {} for size in sizes}
    for n in range(WARM + rounds):
        for size in sizes:
            for _ in range(size):
                orders.bid_place(buyer=buyer, market=market, constraint=bid_text(rng, offers))
            before = statements.counts()
            del cycles[:]
            counted = n >= WARM
            backend_before = backends.read()
            cpu = task_call(run_task, profile if counted else None)
            backend, pids = BackendCpu.spent(backend_before, backends.read())
            after = statements.counts()
            assert cycles[0][1] == size, f"the first cycle took {cycles[0][1]} of {size} bids"
            if not counted:
                continue
            figures[size]["task"].append(cpu * 1000)
            figures[size]["cycle"].append(cycles[0][0] * 1000)
            figures[size]["backend"].append(backend * 1000)
            spread[len(pids)] = spread.get(len(pids), 0) + 1
            figures[size]["empty"] += [c * 1000 for c, changes in cycles[1:] if not changes]
            delta = {q: k - before.get(q, 0) for q, k in after.items() if k > before.get(q, 0)}
            figures[size]["statements"].append(sum(delta.values()))
            for query, k in delta.items():
                sent[size][query] = sent[size].get(query, 0) + k
    tasks.matching_cycle_run = cycle_run
    with connection.cursor() as cursor:
        cursor.execute(WHOLE_WRITTEN, marks)
        (written,) = cursor.fetchone()
    return {
        "mode": "whole-cycle",
        "rounds": rounds,
        "cpu": machine.cpu_model(),
        "sizes": {
            size: {
                "task_cpu_ms": _ms(f["task"]),
                "cycle_cpu_ms": _ms(f["cycle"]),
                "empty_cycle_cpu_ms": _ms(f["empty"]),
                "backend_cpu_ms": _ms(f["backend"]),
                "statements_per_task": round(statistics.fmean(f["statements"]), 2),
                "statements": {
                    q: round(k / rounds, 2)
                    for q, k in sorted(sent[size].items(), key=lambda x: -x[1])
                },
            }
            for size, f in figures.items()
        },
        "backends_per_task": {str(k): v for k, v in sorted(spread.items())},
        "backend_cpu_clock": "schedstat" if backends.precise else "stat",
        "loadavg": os.getloadavg(),
        "digest": hashlib.sha256(written.encode()).hexdigest(),
    }


def task_call(run: Any, profile: cProfile.Profile | None = None) -> float:
    """Run ``run`` (under ``profile`` if given); its CPU in seconds."""
    if profile is not None:
        profile.enable()
    cpu = time.process_time()
    run()
    cpu = time.process_time() - cpu
    if profile is not None:
        profile.disable()
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--offers", type=int, default=600)
    parser.add_argument("--bids", type=int, default=12_000)
    parser.add_argument("--changed", type=int, default=50)
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--whole-cycle", action="store_true")
    parser.add_argument("--sizes", default="1,10", help="bids a round, in turn")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--statements", action="store_true", help="each statement's count")
    args = parser.parse_args()
    url = provision._with_path(provision.SERVER_URL, DATABASE)
    if args.build:
        url = fresh_database(DATABASE)
        load_bench_book(url, offers=args.offers, bids=args.bids)
    if args.whole_cycle:
        url = run_copy()
    os.environ.update(_env(url))
    django.setup()
    profile = cProfile.Profile(time.process_time) if args.profile else None
    if args.whole_cycle:
        sizes = [int(size) for size in args.sizes.split(",")]
        result = whole_cycles(sizes, args.rounds, profile)
        if not args.statements:
            for figures in result["sizes"].values():
                del figures["statements"]
    else:
        result = refresh_calls(args.changed, args.cycles, args.seed, profile)
    if profile is not None:
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats(order).print_stats(args.profile)
            print(out.getvalue())
        return
    print(json.dumps(result))


def refresh_calls(
    changed: int, cycles: int, seed: int, profile: cProfile.Profile | None
) -> dict[str, Any]:
    """The calls of ``best_offers_refresh`` (see the module's docstring); their figures."""
    # Django's: main() calls django.setup() first.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(CANDIDATES)
        candidates = [row[0] for row in cursor.fetchall()]
    rng = random.Random(seed)
    digest = hashlib.sha256()
    cpus, notes = [], []
    for cycle in range(WARM + cycles):
        offers = sorted(rng.sample(candidates, changed))
        cpu, count = one_call(offers, digest, profile if cycle >= WARM else None)
        if cycle >= WARM:
            cpus.append(cpu * 1000)
            notes.append(count)
    return {
        "changed_offers": changed,
        "cycles": cycles,
        "cpu_ms": _ms(cpus),
        "notifications_per_call": round(statistics.fmean(notes), 1),
        "loadavg": os.getloadavg(),
        "digest": digest.hexdigest(),
    }


if __name__ == "__main__":
    main()
