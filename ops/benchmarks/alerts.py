"""Alerts at exchange speed (SPEC 9 "Alerts", issue 35 item 7): ``ops/bench alerts`` or

    .venv/bin/python ops/benchmarks/alerts.py [--sizes 1000,10000,...] [--rate R] [--seconds S]

For each number of live subscriptions, on a fresh bench database (``intersect_bench_alerts``,
migrated) with its own stack on loopback (``ops/stack.py``: uvicorn, Celery's matching and
tasks workers and beat, and TWO ``manage.py subscription_engine`` processes sharing the
partitions):

* the subscriptions (70% form 1, 20% form 3, 10% form 4, over 100 subjects, each able to
  fire: ``subscription_engine.py``'s queries) registered in bulk through the service
  (``subscriptions_create_many``, 100 a user, the most a user may keep): registrations
  per second, and the seconds the first 10,000 took;
* once the engines hold every subscription and have caught up, trades appended to the log
  at ``R`` a second for ``S`` seconds, each in its own transaction on a random subject of
  the 100 (each append wakes the engines through Redis);
* delays: from each event's log time to its ``sub:<id>`` frame at a client following a
  sample of the subscriptions (the first owner's form 1 ones, on 40 subjects) on one WebSocket (this process's clock, the same machine's),
  and to the notification row's commit for every notification (the engines' share);
* the engines' lag in events (their heartbeats), read every second: its maximum and its
  last reading; the drain: seconds after the last append until every notification of the
  sample has come;
* memory: the engine processes' resident memory once every subscription is in their sets,
  less the same processes' before any subscription existed, per subscription.

* correctness: every subscription of the first three owners (300) compared with
  ``run_offline`` over the log as its owner sees it, after the stack stops (``oracle``);
  ``--engines 1`` and the default two on the same load give SPEC 9's scale-out comparison.

The load average is recorded beside each size. The events are the trades this process
appends. Prints one JSON line per size, then the whole result.

    .venv/bin/python ops/benchmarks/alerts.py --bid-path [--subscriptions 10000] [--rate 50]
        [--readers 20] [--seconds 60] [--offers 10000] [--bids 100000]

drives the bid path instead (issue 35 item 7: "the bid path's own p50/p99 worsen by at most
10% against the same run without subscriptions"): on SPEC 9's book (``ops/bench_live.py``'s,
in a database of its own, ``intersect_bench_bidpath``) and one stack with two engine
processes, ``ops/bench_live.py``'s load (bids to their ``best_offer`` frames, reads beside
them) once without subscriptions and once with ``--subscriptions`` of them on the events
that load appends (``bid_path_query``); both runs' frame and 201 p50/p99, their ratio, and
the alerts' log-to-``sub:`` frame delays in the second run, into
``test-artifacts/bench/alerts-bid-path.json`` (or ``--json``) and docs/benchmarks.md
between its markers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import django

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ops.benchmarks import machine
from ops.benchmarks.follow import Frame, follow, quantiles
from ops.benchmarks.history import _env, fresh_database
from ops.benchmarks.live import checks, load, provision, runs
from ops.benchmarks.live.load import SUBJECT
from ops.benchmarks.report.alerts import bid_path_into, bid_path_section
from ops.benchmarks.subscription_engine import _append, _query, log_head

DATABASE = "intersect_bench_alerts"
SIZES = (1_000, 3_000, 10_000, 30_000, 100_000)
QUICK = (1_000,)
ENGINES = 2
# Owners (100 subscriptions each) whose every outbox a run checks against ``run_offline``.
ORACLE_OWNERS = 3
# Subscriptions whose ``sub:`` frames the client follows: the first owner's form 1 ones (on
# as many subjects).
FOLLOWED = 40
# Registrations timed for SPEC 9's bar.
REGISTER_BAR = 10_000
# With BENCH_PROFILE=DIR, py-spy records each engine process (the thread holding the GIL:
# its CPU in Python) while the trades are appended
# (DIR/engine<i>-<size>.txt, collapsed stacks), or with --bid-path while the second load
# runs (DIR/engine<i>-bid-path.txt).
PROFILE = os.environ.get("BENCH_PROFILE", "")


def _spies(engines: list[Any], seconds: float, tag: str) -> list[subprocess.Popen[bytes]]:
    """With ``BENCH_PROFILE``, a py-spy recording each engine for ``seconds``
    (``DIR/engine<i>-<tag>.txt``); else none."""
    if not PROFILE:
        return []
    Path(PROFILE).mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [str(Path(sys.executable).parent / "py-spy"), "record", "--gil", "--format", "raw"]
            + ["-r", "50", "-d", str(int(seconds))]
            + ["-o", f"{PROFILE}/engine{i}-{tag}.txt", "--pid", str(e.pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i, e in enumerate(engines)
    ]


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_s(pid: int) -> float:
    """A process's CPU time so far (user and system), in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce(rng: Any, rate: float, seconds: float) -> tuple[int, int]:
    """Trades appended at ``rate`` a second for ``seconds``, one a transaction, or, when the
    appends fall behind the schedule (a loaded machine), the ones due together in one (as
    a matching cycle appends its batch): the log's last ``seq`` before the first, and how
    many."""
    head = log_head()
    begun = time.monotonic()
    n = 0
    while time.monotonic() - begun < seconds:
        due = min(int((time.monotonic() - begun) * rate) + 1 - n, int(rate))
        if due > 0:
            _append(rng, due)
            n += due
        time.sleep(max(0.0, begun + n / rate - time.monotonic()))
    return head, n


def _beats() -> list[tuple[str, int, int]]:
    """The engine processes' heartbeats: name, subscriptions held, lag in events."""
    # Django's: this runs in the --run process, after django.setup() (main)
    from exchange.models import SubscriptionEngineProcess

    return list(SubscriptionEngineProcess.objects.values_list("name", "subscriptions", "lag"))


def _register(owners: list[Any], queries: list[str]) -> tuple[float, float]:
    """Every query registered in bulk, 100 a user: total seconds, and the seconds the
    first ``REGISTER_BAR`` took."""
    # Django's: this runs in the --run process, after django.setup() (main)
    from exchange.services import subscriptions as service

    started = time.perf_counter()
    bar = None
    for i, owner in enumerate(owners):
        chunk = queries[i * service.MAX_ACTIVE : (i + 1) * service.MAX_ACTIVE]
        service.subscriptions_create_many(owner=owner, queries=chunk)
        if bar is None and (i + 1) * service.MAX_ACTIVE >= REGISTER_BAR:
            bar = time.perf_counter() - started
    total = time.perf_counter() - started
    return total, bar if bar is not None else total


def _owners(subscriptions: int) -> list[Any]:
    """Users enough to own ``subscriptions``, 100 each (no password: they never log in)."""
    # Django's: this runs in a --run process, after django.setup() (main)
    from django.contrib.auth.models import User

    from exchange.services import subscriptions as service

    count = -(-subscriptions // service.MAX_ACTIVE)
    return User.objects.bulk_create(User(username=f"bench-alerts-{i}") for i in range(count))


def _join(stack: Any, engines: list[Any], rng: Any, registered: int) -> float:
    """Seconds until the engines hold every one of the ``registered`` subscriptions and
    have caught up (a joiner joins with the first event after it: a trade on a subject of
    ``subscription_engine.SUBJECTS`` is appended every second meanwhile)."""
    joining = time.monotonic()
    deadline = joining + 900
    held = 0
    while time.monotonic() < deadline:
        for e in engines:
            stack.check_alive(e.name)
        beats = _beats()
        held = sum(s for _, s, _ in beats)
        if held >= registered and all(lag <= 2 for _, _, lag in beats):
            return time.monotonic() - joining
        _append(rng, 1)
        time.sleep(1)
    raise RuntimeError(f"the engines took {held} of {registered} subscriptions in 900 s")


def _followed(owner: Any) -> list[int]:
    """The subscriptions the client follows: ``owner``'s first ``FOLLOWED`` form 1 ones."""
    # Django's: this runs in a --run process, after django.setup() (main)
    from exchange.models import Subscription

    return list(
        Subscription.objects.filter(owner=owner, kind="events", state="active")
        .order_by("pk")
        .values_list("pk", flat=True)[:FOLLOWED]
    )


class LagSampler:
    """The engines' largest lag in events, read each second from their heartbeats in a
    thread of its own between ``start`` and ``stop``."""

    def __init__(self) -> None:
        self.lags: list[int] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        # Django's: this runs in a --run process, after django.setup() (main)
        from django.db import connection

        try:
            while not self._stopping.is_set():
                self.lags.append(max((lag for _, _, lag in _beats()), default=0))
                self._stopping.wait(1.0)
        finally:
            connection.close()

    def start(self) -> LagSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(5)


def _drain(head: int, followed: list[int], frames: list[Frame], seconds: float) -> None:
    """Until the engines have caught up and every notification of the ``followed``
    subscriptions past ``head`` has come as a frame, ``seconds`` at most."""
    # Django's: this runs in a --run process, after django.setup() (main)
    from django.db import connection

    def wanted() -> set[tuple[int, int]]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT n.subscription_id, n.seq FROM exchange_subscriptionnotification n "
                "WHERE n.seq > %s AND n.subscription_id = ANY(%s)",
                [head, followed],
            )
            return set(cursor.fetchall())

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = {(s, q) for s, q, _ in frames if q > head}
        if max((lag for _, _, lag in _beats()), default=0) <= 2 and wanted() <= got:
            return
        time.sleep(0.2)


def _delays(head: int, frames: list[Frame]) -> tuple[int, list[float], list[float]]:
    """The notifications of the events past ``head``: how many, the delays in seconds
    from each followed one's event to its frame, and from every event to its row."""
    # Django's: this runs in a --run process, after django.setup() (main)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n.subscription_id, e.seq, extract(epoch FROM e.time), "
            "extract(epoch FROM n.created_at - e.time) "
            "FROM exchange_subscriptionnotification n JOIN exchange_event e ON e.seq = n.seq "
            "WHERE n.seq > %s AND e.seq > %s",
            [head, head],
        )
        rows = cursor.fetchall()
    times = {(sub, seq): float(t) for sub, seq, t, _ in rows}
    arrivals = {(sub, seq): at for sub, seq, at in frames if seq > head}
    frame_delays = [at - times[key] for key, at in arrivals.items() if key in times]
    return len(rows), frame_delays, [float(d) for _, _, _, d in rows]


def oracle_check(owners: list[Any]) -> dict[str, Any]:
    """Every subscription of ``owners`` (100 each) against ``run_offline`` over the log as
    its owner sees it, once the stack has stopped: how many were checked and which differ
    (their ids). The same figures from runs with one and with two engine processes say
    that partitioning changes no outbox."""
    # Django's: this runs in the --run process, after django.setup() (main)
    from exchange.models import Subscription
    from exchange.selectors.events import events_log_end
    from exchange.selectors.history import history_events
    from exchange.selectors.subscriptions import subscription_notifications
    from matching.subscriptions import parse_query, run_offline

    end = events_log_end()
    checked, differ, notifications = 0, [], 0
    for owner in owners:
        log = list(history_events(user=owner, after=0, upto=end))
        for sub in Subscription.objects.filter(owner=owner).order_by("pk"):
            sent = subscription_notifications(subscription_id=sub.pk, after=0, limit=10**7)
            if sub.state == "done" and sub.reason == "completed":
                sent.append({"end": True})
            expected = list(run_offline(parse_query(sub.query), log, now=sub.now))
            checked += 1
            notifications += len(sent)
            if sent != expected:
                differ.append(sub.pk)
    return {"checked": checked, "notifications": notifications, "differ": differ}


def _close(sampler: LagSampler, socket: Any, stack: Any) -> None:
    """The end of a run, however it ends: the sampler, the follower's socket, the stack."""
    sampler.stop()
    if socket is not None:
        socket.close()
    stack.stop()


def _figures(
    head: int,
    frames: list[Frame],
    followed: list[int],
    lags: list[int],
    cpu: list[float],
    drained: float,
    seconds: float,
) -> dict[str, Any]:
    """The alerts' figures of a run whose events came after ``head``: notifications, the
    delays to the frames and to the rows, the engines' CPU (seconds each) and lag, and the
    drain."""
    notifications, frame_delays, row_delays = _delays(head, frames)
    return {
        "notifications": notifications,
        "notifications_per_s": round(notifications / seconds),
        "followed": len(followed),
        "frames": len(frame_delays),
        "frame": quantiles(frame_delays),
        "row": quantiles(row_delays),
        # the engines' CPU while the events came: what they need of a core each
        "engine_cpu_s": [round(c, 1) for c in cpu],
        "lag_max": max(lags, default=0),
        "lag_last": lags[-1] if lags else 0,
        "drain_s": round(drained, 1),
    }


def run(
    subscriptions: int, rate: float, seconds: float, engines_n: int = ENGINES
) -> dict[str, Any]:
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.conf import settings

    from exchange.models import Subscription
    from exchange.services.tokens import token_issue
    from ops.stack import Stack

    rng = random.Random(35)
    load_start = os.getloadavg()
    owners = _owners(subscriptions)
    token = token_issue(user=owners[0]).key  # a stream is its owner's alone
    queries = [_query(i, rng, True) for i in range(subscriptions)]
    stack = Stack(env=dict(os.environ), log_dir=ROOT / "test-artifacts" / "bench" / "alerts")
    frames: list[Frame] = []
    sampler = LagSampler()
    socket = None
    try:
        stack.start_worker(role="matching", concurrency=1)
        stack.start_worker(role="tasks", concurrency=1)
        engines = stack.start_subscription_engines(engines_n)
        stack.start_beat()
        stack.start_server(ready_path="/healthz", ready_seconds=90)
        time.sleep(2)
        rss_before = sum(_rss_kb(e.pid) for e in engines)
        registering, first_bar = _register(owners, queries)
        registered = Subscription.objects.filter(state="active").count()
        joined_s = _join(stack, engines, rng, registered)
        time.sleep(2)
        rss_after = sum(_rss_kb(e.pid) for e in engines)
        followed = _followed(owners[0])
        socket = follow(stack.ws_url, token, followed, frames)
        sampler.start()
        spies = _spies(engines, seconds, str(subscriptions))
        cpu = [_cpu_s(e.pid) for e in engines]
        head, n = produce(rng, rate, seconds)
        ended = time.monotonic()
        cpu = [_cpu_s(e.pid) - before for e, before in zip(engines, cpu, strict=True)]
        load_run = os.getloadavg()
        _drain(head, followed, frames, 120)
        drained = time.monotonic() - ended
        sampler.stop()
        for spy in spies:
            spy.wait(30)
    finally:
        _close(sampler, socket, stack)
    return {
        "subscriptions": subscriptions,
        "registered": registered,
        "engines": engines_n,
        "oracle": oracle_check(owners[:ORACLE_OWNERS]),
        "lease_seconds": settings.SUBSCRIPTION_ENGINE_LEASE_SECONDS,
        "registering_s": round(registering, 2),
        "registering_per_s": round(subscriptions / registering),
        "first_10000_s": round(first_bar, 2),
        "joined_s": round(joined_s, 1),
        "rss_kb_per_subscription": round((rss_after - rss_before) / max(1, subscriptions), 2),
        "rss_mb": round(rss_after / 1024),
        "events": n,
        "rate": rate,
        "seconds": seconds,
        **_figures(head, frames, followed, sampler.lags, cpu, drained, seconds),
        "lags": sampler.lags,
        "load_start": [round(x, 2) for x in load_start],
        "load_run": [round(x, 2) for x in load_run],
        "load_end": [round(x, 2) for x in os.getloadavg()],
    }


# --bid-path (issue 35 item 7, "the bid path's own p50/p99 worsen by at most 10%"): SPEC 9's
# bid load (``ops/bench_live.py``'s, on its book, kept in a database of its own) without and
# with live subscriptions on the events that load appends: a bid appends ``bid_placed``
# (its owner's alone) and, when it becomes an offer's best, ``best_offer`` (everyone's). The
# mix of ``_query`` over the book's one market: its offers in ``SLICES`` slices of
# consecutive ids stand for the 100 subjects, each subscription on one slice.
BID_PATH_DATABASE = "intersect_bench_bidpath"
BID_PATH_RESULTS = ROOT / "test-artifacts" / "bench" / "alerts-bid-path.json"
SLICES = 100
BEST = "type = 'best_offer' AND subject = '{s}' AND offer >= {lo} AND offer <= {hi}"
BID_FORM1 = (
    "SELECT value WHERE type = 'best_offer', subject = '{s}', offer >= {lo}, offer <= {hi}, "
    "value > 1.{x:02d}"
)
BID_FORM3 = (
    "SELECT a.value, b.value FROM FILTER{{" + BEST + "}}(EVENTS) AS a "
    "NEXT{{b.value > 1.00{k} * a.value}} FILTER{{" + BEST + "}}(EVENTS) AS b WITHIN 10m"
)
BID_FORM4 = (
    "SELECT MAX(best_value) FROM offers WHERE subject = '{s}' AND offer BETWEEN {lo} AND {hi}"
)


def bid_path_query(i: int, rng: Any, first_offer: int, offers: int) -> str:
    """Subscription ``i`` of the bid path's mix: 70% form 1, 20% form 3, 10% form 4 (as
    ``_query``), on slice ``i % SLICES`` of the ``offers`` consecutive offers from
    ``first_offer``; each fires on the ``best_offer`` events of its slice (form 1 on every
    one: the load's bids beat the book's best values, 1.49 at most)."""
    width = max(1, offers // SLICES)
    lo = first_offer + (i % SLICES) * width
    where = {"s": SUBJECT, "lo": lo, "hi": lo + width - 1}
    kind = i % 10
    if kind < 7:
        return BID_FORM1.format(**where, x=rng.randrange(0, 50))
    if kind < 9:
        return BID_FORM3.format(**where, k=rng.randrange(1, 9))
    return BID_FORM4.format(**where)


def _offers_into_log() -> int:
    """The book's open offers appended to the log as ``offer_posted`` events, in one
    append (the best-offer changes not yet logged follow them): ``manage.py bench_book``
    writes its offers in bulk, past the log, and a form 4 watch knows the open offers
    from the log only. How many."""
    # Django's: this runs in the --bid-path-run process, after django.setup() (main)
    from django.db import transaction

    from exchange.market_rules import order_constraint
    from exchange.models import Offer
    from exchange.selectors.markets import market_schema
    from exchange.services.events import events_append, order_event
    from exchange.services.matching import cycle_lock

    rows = []
    schemas: dict[int, Any] = {}
    for offer in Offer.objects.filter(state="open").select_related("market").order_by("pk"):
        market = offer.market
        schema = schemas.setdefault(market.pk, market_schema(market=market))
        rules = order_constraint(
            schema=schema, tick=market.tick, side="offer", source=offer.constraint_text
        )
        event = order_event("offer_posted", offer, rules.constraint).event
        data = {k: v for k, v in event.items() if k not in ("type", "subject")}
        rows.append((event["type"], event["subject"], None, data))
    with transaction.atomic():
        cycle_lock()
        events_append(closed=rows)
    return len(rows)


def bid_path_run(options: dict[str, Any]) -> dict[str, Any]:
    """``--bid-path``'s one process: the book built afresh (so no subscription of an
    earlier run is left in it), the stack of ``ops/bench_live.py`` with two engine
    processes, the load without subscriptions, ``subscriptions`` registered, the load again
    with them."""
    # Django's: this runs in the --bid-path-run process, after django.setup() (main)
    from exchange.models import Subscription
    from exchange.services.tokens import token_issue
    from ops.stack import Stack

    o = options
    t0 = time.perf_counter()
    provision.book_build(offers=o["offers"], bids=o["bids"], seed=o["seed"])
    provision.book_refresh()
    checks.outbox_settle()
    offers_logged = _offers_into_log()
    checks.outbox_settle()
    provision.book_settle()
    book = checks.book_size()
    tokens = provision.tokens([f"buyer{i}" for i in range(load.BUYERS)])
    first_offer = int(checks.one_row("SELECT min(id) FROM exchange_offer WHERE state = 'open'")[0])
    rng = random.Random(35)
    owners = _owners(o["subscriptions"])
    token = token_issue(user=owners[0]).key
    queries = [bid_path_query(i, rng, first_offer, o["offers"]) for i in range(o["subscriptions"])]
    env = provision.env() | {"SUBSCRIPTION_ENGINE_PROCESSES": str(ENGINES)}
    stack = Stack(env=env, log_dir=ROOT / "test-artifacts" / "bench" / "alerts-bid-path")
    setup_s = time.perf_counter() - t0

    def drive() -> dict[str, Any]:
        before = machine.cpu_snapshot()
        result = runs.drive_rate(
            stack,
            offers=o["offers"],
            rate=o["rate"],
            seconds=o["seconds"],
            readers=o["readers"],
            seed=o["seed"],
            tokens=tokens,
        )
        return result | {"cpu_s": machine.cpu_by_kind(before)}

    frames: list[Frame] = []
    sampler = LagSampler()
    socket = None
    try:
        runs.start(stack, web_workers=o["web_workers"], socket_workers=o["socket_workers"])
        engines = [stack.processes[f"engine{i}"] for i in range(ENGINES)]
        _join(stack, engines, rng, 0)  # the engines past the book's events
        without = drive()
        rss_before = sum(_rss_kb(e.pid) for e in engines)
        registering, first_bar = _register(owners, queries)
        registered = Subscription.objects.filter(state="active").count()
        joined_s = _join(stack, engines, rng, registered)
        rss_after = sum(_rss_kb(e.pid) for e in engines)
        followed = _followed(owners[0])
        socket = follow(stack.ws_url, token, followed, frames)
        sampler.start()
        cpu = [_cpu_s(e.pid) for e in engines]
        head = log_head()
        spies = _spies(engines, o["seconds"], "bid-path")
        with_subscriptions = drive()
        for spy in spies:
            spy.wait(30)
        cpu = [_cpu_s(e.pid) - before for e, before in zip(engines, cpu, strict=True)]
        ended = time.monotonic()
        _drain(head, followed, frames, 60)
        drained = time.monotonic() - ended
        sampler.stop()
        verdict = checks.verified()
    finally:
        _close(sampler, socket, stack)
    return {
        "offers": book[0],
        "bids": book[1],
        "offers_logged": offers_logged,
        "rate": o["rate"],
        "readers": o["readers"],
        "seconds": o["seconds"],
        "web_workers": o["web_workers"],
        "socket_workers": o["socket_workers"],
        "setup_s": round(setup_s, 1),
        "subscriptions": o["subscriptions"],
        "registered": registered,
        "engines": ENGINES,
        "registering_s": round(registering, 2),
        "first_10000_s": round(first_bar, 2),
        "joined_s": round(joined_s, 1),
        "rss_kb_per_subscription": round((rss_after - rss_before) / max(1, registered), 2),
        "without": without,
        "with": with_subscriptions,
        "alerts": _figures(head, frames, followed, sampler.lags, cpu, drained, o["seconds"]),
        "verify": verdict,
    }


def bid_path(options: dict[str, Any]) -> dict[str, Any]:
    """``--bid-path``: ``bid_path_run`` in a process of its own against the bid path's
    database (so that no other bench's book or subscriptions are in it), with the facts
    of the machine and the command."""
    env = provision.env() | {
        "BENCH_LIVE_DATABASE": BID_PATH_DATABASE,
        "DATABASE_URL": provision._with_path(provision.SERVER_URL, BID_PATH_DATABASE),
    }
    argv = [sys.executable, __file__, "--bid-path-run", json.dumps(options)]
    done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"alerts.py --bid-path: the run failed (exit {done.returncode})")
    host = machine.host()
    facts = {k: host[k] for k in ("date", "commit", "cpu", "cores")}
    command = " ".join([".venv/bin/python", "ops/benchmarks/alerts.py", *sys.argv[1:]])
    return facts | {"command": command} | json.loads(done.stdout.strip().splitlines()[-1])


# The frames a profile's summary names: the engine's own and the libraries it spends in
# (not the loop that calls it, nor the threads' machinery).
OURS = ("(exchange/", "(matching/", "channels_redis/", "(psycopg/", "(json/", "(redis/")


def _ours(frame: str) -> bool:
    return (
        any(part in frame for part in OURS)
        and "runner.py" not in frame
        and ("management/" not in frame)
    )


def profile_lines(path: Path, count: int = 14) -> list[str]:
    """The top of a py-spy raw profile (collapsed stacks): each function's share of the
    samples, inclusive (the frames every sample holds left out), then the top own time."""
    inclusive: dict[str, int] = {}
    own: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        total += int(n)
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + int(n)
        own[frames[-1]] = own.get(frames[-1], 0) + int(n)
    if not total:
        return []
    ranked = [(n, f) for f, n in inclusive.items() if _ours(f)]
    lines = [f"{100 * n / total:5.1f}%  {f}" for n, f in sorted(ranked, reverse=True)[:count]]
    lines += ["own time:"]
    lines += [
        f"{100 * n / total:5.1f}%  {f}" for f, n in sorted(own.items(), key=lambda x: -x[1])[:6]
    ]
    return [f"{total:,} samples", *lines]


def measure(
    *,
    quick: bool = False,
    sizes: tuple[int, ...] | None = None,
    rate: float = 50,
    seconds: float = 60,
    engines: int = ENGINES,
) -> dict[str, Any]:
    """Each size on a fresh bench database and stack of its own, with ``engines`` engine
    processes."""
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out |= {"cpu": machine.cpu_model(), "cores": os.cpu_count(), "commit": _commit()}
    out["runs"] = []
    for size in sizes or (QUICK if quick else SIZES):
        url = fresh_database(DATABASE)
        argv = [sys.executable, __file__, "--run", "--sizes", str(size)]
        argv += ["--rate", str(rate), "--seconds", str(10 if quick else seconds)]
        argv += ["--engines", str(engines)]
        done = subprocess.run(argv, cwd=ROOT, env=_env(url), capture_output=True, text=True)
        if done.returncode != 0:
            out["runs"].append({"subscriptions": size, "failed": done.stderr[-2000:]})
            print(f"alerts: {size:,} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
            break
        result = json.loads(done.stdout.strip().splitlines()[-1])
        spied = Path(PROFILE) / f"engine0-{size}.txt" if PROFILE else None
        if spied is not None and spied.exists():
            out["profile"] = [f"{size:,} subscriptions:", *profile_lines(spied)]
        print(json.dumps({k: v for k, v in result.items() if k != "lags"}), file=sys.stderr)
        out["runs"].append(result)
    return out


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return done.stdout.strip()


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x.replace("_", "")) for x in text.split(",") if x)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=_ints, default=SIZES)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument(
        "--engines",
        type=int,
        default=ENGINES,
        help=f"engine processes sharing the partitions (default {ENGINES}); SPEC 9's "
        "scale-out compares 1 and 2 on the same load",
    )
    ap.add_argument("--run", action="store_true", help="(internal) one size in this database")
    ap.add_argument(
        "--bid-path",
        action="store_true",
        help="SPEC 9's bid load (ops/bench_live.py's, on its book: --rate bids/s, "
        "default 50, and --readers reads/s for --seconds) without and then with "
        "--subscriptions live subscriptions on the events it appends, on two engine "
        "processes: the bid path's frame and 201 p50/p99 of both, their ratio, and the "
        "alerts' log-to-sub: frame delays; into test-artifacts/bench/alerts-bid-path.json "
        "(or --json) and docs/benchmarks.md",
    )
    ap.add_argument("--subscriptions", type=int, default=10_000, help="with --bid-path")
    ap.add_argument("--offers", type=int, default=10_000, help="with --bid-path: the book's")
    ap.add_argument("--bids", type=int, default=100_000, help="with --bid-path: the book's")
    ap.add_argument("--readers", type=float, default=20.0, help="with --bid-path")
    ap.add_argument("--web-workers", type=int, default=2, help="with --bid-path")
    ap.add_argument("--socket-workers", type=int, default=1, help="with --bid-path")
    ap.add_argument("--seed", type=int, default=7, help="with --bid-path")
    ap.add_argument("--json", type=Path, help="with --bid-path: the results here")
    ap.add_argument("--bid-path-run", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.bid_path_run:
        django.setup()
        print(json.dumps(bid_path_run(json.loads(args.bid_path_run))))
        return 0
    if args.bid_path:
        return bid_path_main(args)
    if args.run:
        django.setup()
        print(json.dumps(run(args.sizes[0], args.rate, args.seconds, args.engines)))
        return 0
    measured = measure(sizes=args.sizes, rate=args.rate, seconds=args.seconds, engines=args.engines)
    print(json.dumps(measured))
    return 0


def bid_path_main(args: argparse.Namespace) -> int:
    """``--bid-path``: the two runs, their results and their subsection."""
    if args.subscriptions <= 0:
        raise SystemExit("--subscriptions takes a positive count")
    options = {
        key: getattr(args, key)
        for key in ("subscriptions", "offers", "bids", "readers", "seconds", "seed")
    } | {
        "rate": args.rate,
        "web_workers": args.web_workers,
        "socket_workers": args.socket_workers,
    }
    result = bid_path(options)
    out = args.json or BID_PATH_RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    bid_path_into(ROOT / "docs" / "benchmarks.md", result)
    print(bid_path_section(result))
    print(f"raw results: {out}")
    clean = all(not result[k]["errors"] for k in ("without", "with"))
    return 0 if clean and "correct" in result["verify"] else 1


if __name__ == "__main__":
    sys.exit(main())
