"""SPEC 9's historic-read benchmark: 1,000,000 events over 30 days read back as
``GET /api/v1/events/?format=jsonl`` from uvicorn on loopback, in events per second, and the
plan of a one-day read (which partitions it touches), the ``events:`` and ``sub:``
WebSocket streams' resumes (the log, and a subscription's outbox, replayed to a client) in
events per second, one frame an event and in ``batch`` frames (the ``events:`` one in
``batch`` frames over the whole log: SPEC 9's historic subscription), and what the log's
writer adds to a matching cycle (SPEC 9: at most 10%) on a book of 2,000 offers and 6,000
bids (``manage.py bench_book``), the writer switched off in every other cycle.

    ops/bench --history-only [--quick]    this benchmark alone (``--quick``: 50,000 events
                                          over 3 days); its section of docs/benchmarks.md
                                          (or DIR/benchmarks.md with --out DIR) replaced

It runs in a database of its own, ``intersect_bench_history`` (or
``BENCH_HISTORY_DATABASE``), on the cluster of
``BENCH_DATABASE_URL`` (else the development cluster), built by the product's migrations.
The events are written straight into the log in SQL, in the shapes the writer gives them
(offer postings with their constraint text, best offers with and without a value, trades,
withdrawals; 200 markets), numbered 1, 2, 3, ... with ``time`` rising evenly over the days,
into the daily partitions ``event_partitions_ensure`` makes. The machine may be shared:
the load average is recorded before and after each measurement.
"""

from __future__ import annotations

import argparse
import datetime as dt
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
import httpx
import psycopg
from psycopg import sql
from websockets.sync.client import connect
from websockets.typing import Origin

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ops.benchmarks import machine
from ops.benchmarks.live import provision
from ops.stack import Stack

# BENCH_HISTORY_DATABASE: another name, so that two runs on one cluster keep apart.
DATABASE = os.environ.get("BENCH_HISTORY_DATABASE") or "intersect_bench_history"
FULL = {"events": 1_000_000, "days": 30, "markets": 200}
QUICK = {"events": 50_000, "days": 3, "markets": 20}
START = "2026-01-01T00:00:00Z"

GENERATE = """
INSERT INTO exchange_event (seq, time, type, subject, owner_id, data)
SELECT g, %(start)s::timestamptz + g * (%(days)s * interval '1 day' / (%(events)s + 1)),
       (ARRAY['offer_posted', 'best_offer', 'best_offer', 'trade', 'offer_withdrawn'])[1 + g %% 5],
       'office.supplies.m' || (g %% %(markets)s), NULL,
       CASE g %% 5
         WHEN 0 THEN jsonb_build_object('offer', g, 'version', 1, 'ask', '1.25',
              'quantity_min', 1000, 'quantity_max', 5000,
              'constraint', 'lot BETWEEN 1000 AND 5000 AND price >= 1.25')
         WHEN 1 THEN jsonb_build_object('offer', g - 1, 'value', '1.30', 'matching_bids', 3)
         WHEN 2 THEN jsonb_build_object('offer', g - 2, 'matching_bids', 0)
         WHEN 3 THEN jsonb_build_object('offer', g - 3, 'trade', g, 'price', '1.30',
              'quantity', 2000)
         ELSE jsonb_build_object('offer', g - 4)
       END
FROM generate_series(1, %(events)s) AS g
"""


def _env(database_url: str) -> dict[str, str]:
    return provision.env() | {"DATABASE_URL": database_url}


def fresh_database(database: str) -> str:
    """The bench database ``database`` dropped, created again and migrated; its URL."""
    url = provision._with_path(provision.SERVER_URL, database)
    provision.cluster_check()
    with psycopg.connect(provision.SERVER_URL, autocommit=True) as conn:
        name = sql.Identifier(database)
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(name))
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=_env(url), check=True
    )
    return url


def load_bench_book(url: str, *, offers: int, bids: int) -> None:
    """The bench book (``manage.py bench_book``, seed 1) loaded into the database at ``url``."""
    subprocess.run(
        [sys.executable, "manage.py", "bench_book", "--offers", str(offers)]
        + ["--bids", str(bids), "--seed", "1"],
        cwd=ROOT,
        env=_env(url),
        check=True,
    )


def provision_log(size: dict[str, int]) -> str:
    """A fresh bench database with the log of ``size``; returns its URL."""
    url = fresh_database(DATABASE)
    env = _env(url)
    days = (
        "import datetime as dt; from exchange.services.event_partitions import "
        "event_partitions_ensure as e; "
        f"e(first=dt.date.fromisoformat('{START[:10]}'), days={size['days'] + 1})"
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", days], cwd=ROOT, env=env, check=True
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(GENERATE, {"start": START, **size})
        conn.execute(
            "UPDATE exchange_eventcounter SET last_seq = %s WHERE id = 1", [size["events"]]
        )
        conn.execute("VACUUM ANALYZE exchange_event")
    return url


def _load() -> float:
    return os.getloadavg()[0]


def read_jsonl(base_url: str, query: str) -> dict[str, Any]:
    """One streamed read over HTTP, counted as it arrives (nothing kept)."""
    load = _load()
    lines = size = 0
    started = time.perf_counter()
    first = None
    with (
        httpx.Client(timeout=None) as client,
        client.stream("GET", f"{base_url}/api/v1/events/?{query}") as response,
    ):
        response.raise_for_status()
        for chunk in response.iter_bytes(1 << 16):
            if first is None:
                first = time.perf_counter() - started
            lines += chunk.count(b"\n")
            size += len(chunk)
    seconds = time.perf_counter() - started
    return {
        "query": query,
        "events": lines,
        "bytes": size,
        "seconds": round(seconds, 3),
        "first_byte_s": round(first or 0.0, 3),
        "events_per_s": round(lines / seconds),
        "load_before": load,
        "load_after": _load(),
    }


def read_resume(
    ws_url: str, origin: str, events: int, *, stream: str = "events:office.>", batch: bool = False
) -> dict[str, Any]:
    """``stream`` (``events:office.>``, or a ``sub:<id>``) resumed from its start over one
    WebSocket, resuming again after each ``replay_limit`` (20,000 items a request), until
    ``events`` items have arrived; with ``batch``, in ``batch`` frames."""
    single, position = ("event", "seq") if stream.startswith("events:") else ("notification", "n")
    items = "data" if single == "event" else "notifications"
    load = _load()
    got = frames = 0
    after = 0
    started = time.perf_counter()
    with connect(ws_url, origin=Origin(origin), max_size=None) as ws:
        while got < events:
            resume = {"action": "resume", "stream": stream, "after": after, "batch": batch}
            ws.send(json.dumps(resume))
            while got < events:
                frame = json.loads(ws.recv())
                kind = frame.get("type")
                if kind == single:
                    got += 1
                elif kind == "batch":
                    got += len(frame[items])
                elif frame.get("code") == "replay_limit":
                    break
                else:
                    continue
                frames += 1
                after = frame[position]
    seconds = time.perf_counter() - started
    return {
        "query": f"{stream} resume",
        "batch": batch,
        "events": got,
        "frames": frames,
        "seconds": round(seconds, 3),
        "events_per_s": round(got / seconds),
        "load_before": load,
        "load_after": _load(),
    }


# A user with a token and a done subscription whose outbox holds one ``SELECT *``
# notification per event of the log's first ``__COUNT__``: what a ``sub:`` resume replays.
OUTBOX = """
import datetime as dt, json
from django.db import connection
from exchange.models import Subscription
from django.contrib.auth.models import User
from exchange.services.tokens import token_issue
owner = User.objects.create_user("bench-outbox", password="bench-pass-1")
now = dt.datetime.now(dt.UTC)
sub = Subscription.objects.create(
    owner=owner, kind="events", query="SELECT *", state="done", reason="completed",
    created_at=now, now=now, seam=0, cursor=0, last_n=__COUNT__)
with connection.cursor() as c:
    c.execute(
        "INSERT INTO exchange_subscriptionnotification (subscription_id, n, seq, data, created_at) "
        "SELECT %s, seq, seq, jsonb_build_object('seq', seq, 'time', time, 'type', type, "
        "'subject', subject) || data, now() FROM exchange_event WHERE seq <= %s", [sub.pk, __COUNT__])
print(json.dumps({"stream": f"sub:{sub.pk}", "token": token_issue(user=owner).key}))
"""


def outbox(url: str, notifications: int) -> dict[str, str]:
    """The ``sub:`` stream and token of a subscription with ``notifications`` in its outbox."""
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            OUTBOX.replace("__COUNT__", str(notifications)),
        ],
        cwd=ROOT,
        env=_env(url),
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def outbox_drop(url: str) -> None:
    """Remove ``outbox``'s user (its token, subscription and notifications go with it):
    ``bench_book`` wants a database without users."""
    drop = (
        "from django.contrib.auth.models import User; "
        'User.objects.filter(username="bench-outbox").delete()'
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", drop], cwd=ROOT, env=_env(url), check=True
    )


def one_day_plan(database_url: str, size: dict[str, int]) -> dict[str, Any]:
    """EXPLAIN ANALYZE of the first page of a read naming the second day."""
    # Django's: this runs in the --plan subprocess, after django.setup() (main)
    from django.contrib.auth.models import AnonymousUser

    from exchange.selectors.history import PAGE_ROWS, HistoryWhere, history_sql

    day = dt.datetime.fromisoformat(START) + dt.timedelta(days=1)
    where = HistoryWhere(since=day, until=day + dt.timedelta(days=1))
    select, params = history_sql(
        user=AnonymousUser(), after=0, upto=size["events"], where=where, limit=PAGE_ROWS
    )
    with psycopg.connect(database_url) as conn:
        # The statement as the read sends it (bound on the client, as Django binds).
        cur = psycopg.ClientCursor(conn)
        cur.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS off) " + select, params)
        text = "\n".join(row[0] for row in cur.fetchall())
    return {"day": day.date().isoformat(), "plan": text}


CYCLE_BOOK = {"offers": 2_000, "bids": 6_000}
QUICK_CYCLE_BOOK = {"offers": 200, "bids": 600}


def cycle_cost(cycles: int) -> dict[str, Any]:
    """Matching cycles on the bench book, each over 40 bids and 10 offers placed through the
    services, the log's writer (``events_append``) switched off in every other cycle;
    milliseconds per cycle with and without it. Runs in the bench database's settings."""
    # Django's: this runs in the --cycles subprocess, after django.setup() (main)
    from django.contrib.auth.models import User
    from django.db import connection

    from exchange.collector import collector_settle
    from exchange.management.commands.bench_book import (
        BENCH_SPENDING_LIMIT,
        SUBJECT,
        bid_text,
        offer_text,
    )
    from exchange.models import Market, Offer, SpendingLimit
    from exchange.services import matching, orders

    collector_settle()  # as the matching worker's pool process does at its start
    orders.matching_cycle_request = lambda market_id: None  # the cycles run here
    writer = matching.events_append
    market = Market.objects.get(subject=SUBJECT)
    seller = User.objects.create_user("bench-log-seller", password="bench-pass-1")
    buyer = User.objects.create_user("bench-log-buyer", password="bench-pass-1")
    SpendingLimit.objects.create(user=buyer, amount=BENCH_SPENDING_LIMIT)
    rng = random.Random(7)
    offers = Offer.objects.count()
    matching.matching_cycle_run()  # the book's first cycle (its rebuild's best offers)
    times: dict[str, list[float]] = {"with": [], "without": []}
    cpu: dict[str, list[float]] = {"with": [], "without": []}
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    load = _load()
    for n in range(cycles):
        for i in range(10):
            orders.offer_publish(
                seller=seller, market=market, constraint=offer_text(offers + n * 10 + i)
            )
        for _ in range(40):
            orders.bid_place(buyer=buyer, market=market, constraint=bid_text(rng, offers))
        on = n % 2 == 0
        matching.events_append = writer if on else (lambda **_: 0)
        started, cpu_started = time.perf_counter(), _cycle_cpu(backend)
        matching.matching_cycle_run()
        times["with" if on else "without"].append(1000 * (time.perf_counter() - started))
        cpu["with" if on else "without"].append(1000 * (_cycle_cpu(backend) - cpu_started))
    matching.events_append = writer
    median = {k: statistics.median(v) for k, v in times.items()}
    mean_cpu = {k: statistics.fmean(v) for k, v in cpu.items()}
    return {
        "cycles": cycles,
        "ms_with": round(median["with"], 1),
        "ms_without": round(median["without"], 1),
        "added": round(median["with"] / median["without"] - 1, 3),
        "cpu_ms_with": round(mean_cpu["with"], 1),
        "cpu_ms_without": round(mean_cpu["without"], 1),
        "cpu_added": round(mean_cpu["with"] / mean_cpu["without"] - 1, 3),
        "load_before": load,
        "load_after": _load(),
    }


def _cycle_cpu(backend: int) -> float:
    """Seconds of CPU spent so far by this process (every thread: the channel-layer sends
    run on one of their own) and by its PostgreSQL backend (``/proc/<pid>/schedstat``, in
    nanoseconds; the bench database is on this machine). A cycle's CPU is what it costs
    whatever else the machine runs; its wall time also counts the waits for the cores."""
    with open(f"/proc/{backend}/schedstat") as f:
        backend_ns = int(f.read().split()[0])
    return time.process_time() + backend_ns / 1e9


def measure(quick: bool = False) -> dict[str, Any]:
    size = QUICK if quick else FULL
    started = time.perf_counter()
    url = provision_log(size)
    stack = Stack(env=_env(url), log_dir=ROOT / "test-artifacts" / "bench" / "history")
    reads = []
    try:
        stack.start_server(ready_path="/api/v1/events/types/")
        # the whole log, then one market's events, then one day's
        reads.append(read_jsonl(stack.url, "format=jsonl"))
        reads.append(read_jsonl(stack.url, "format=jsonl&subject=office.supplies.m7"))
        reads.append(
            read_jsonl(
                stack.url,
                "format=jsonl&since=2026-01-02T00:00:00Z&until=2026-01-03T00:00:00Z",
            )
        )
        count = min(100_000, size["events"])
        sub = outbox(url, count)
        # SPEC 9's historic subscription: the whole log, in batch frames; one frame an
        # event only over the first events (it runs at a few thousand a second).
        resumes = [
            read_resume(stack.ws_url, stack.url, events=count, batch=False),
            read_resume(stack.ws_url, stack.url, events=size["events"], batch=True),
        ] + [
            read_resume(
                f"{stack.ws_url}?token={sub['token']}",
                stack.url,
                events=count,
                stream=sub["stream"],
                batch=batch,
            )
            for batch in (False, True)
        ]
    finally:
        stack.stop()
    outbox_drop(url)
    plan = subprocess.run(
        [sys.executable, __file__, "--plan", url, "--events", str(size["events"])],
        cwd=ROOT,
        env=_env(url),
        check=True,
        capture_output=True,
        text=True,
    )
    book = QUICK_CYCLE_BOOK if quick else CYCLE_BOOK
    load_bench_book(url, offers=book["offers"], bids=book["bids"])
    cycles = subprocess.run(
        [sys.executable, __file__, "--cycles", "6" if quick else "24"],
        cwd=ROOT,
        env=_env(url),
        check=True,
        capture_output=True,
        text=True,
    )
    return machine.host() | {
        "quick": quick,
        "size": size,
        "reads": reads,
        "resumes": resumes,
        "one_day": json.loads(plan.stdout),
        "cycle": json.loads(cycles.stdout.strip().splitlines()[-1]) | book,
        "seconds": round(time.perf_counter() - started),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", help="(internal) print the one-day plan of this database as JSON")
    ap.add_argument("--events", type=int)
    ap.add_argument("--cycles", type=int, help="(internal) time this many cycles, print JSON")
    args = ap.parse_args()
    if not (args.plan or args.cycles):
        return 2

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exchange.settings.development")
    django.setup()
    if args.plan:
        print(json.dumps(one_day_plan(args.plan, {"events": args.events})))
    else:
        print(json.dumps(cycle_cost(args.cycles)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
