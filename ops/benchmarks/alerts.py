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

The machine is shared by other engineers: the load average is recorded beside each size.
The bid path (SPEC 9's book at 50 bids/s) is not driven here: the events are the trades
this process appends. Prints one JSON line per size, then the whole result.
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
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ops.benchmarks import machine
from ops.benchmarks.fairness import _quantiles
from ops.benchmarks.history import _env, fresh_database
from ops.benchmarks.subscription_engine import _append, _query, log_head

DATABASE = "intersect_bench_alerts"
SIZES = (1_000, 3_000, 10_000, 30_000, 100_000)
QUICK = (1_000,)
ENGINES = 2
# Subscriptions whose ``sub:`` frames the client follows: the first owner's form 1 ones (on
# as many subjects).
FOLLOWED = 40
# Registrations timed for SPEC 9's bar.
REGISTER_BAR = 10_000
# With BENCH_PROFILE=DIR, py-spy records each engine process while the trades are appended
# (DIR/engine<i>-<size>.txt, collapsed stacks).
PROFILE = os.environ.get("BENCH_PROFILE", "")


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


def _follow(ws_url: str, token: str, subs: list[int], frames: list[tuple[int, int, float]]) -> Any:
    """One socket following ``sub:<id>`` of each of ``subs``: each notification frame's
    ``(subscription, seq, arrival)``."""
    socket = connect(f"{ws_url}?token={token}", open_timeout=30, max_size=None)
    confirmed = threading.Event()
    count = [0]
    for sub in subs:
        socket.send(json.dumps({"action": "subscribe", "stream": f"sub:{sub}"}))

    def read() -> None:
        try:
            for message in socket:
                at = time.time()
                frame = json.loads(message)
                if frame.get("type") == "subscribed":
                    count[0] += 1
                    if count[0] == len(subs):
                        confirmed.set()
                elif frame.get("type") == "notification" and frame.get("seq") is not None:
                    stream = str(frame.get("stream", ""))
                    sub = int(stream.split(":", 1)[1]) if stream.startswith("sub:") else 0
                    frames.append((sub, int(frame["seq"]), at))
        except Exception:  # the socket closed at the end of the run
            return

    threading.Thread(target=read, daemon=True).start()
    if not confirmed.wait(60):
        raise RuntimeError(f"only {count[0]} of {len(subs)} sub: streams confirmed in 60 s")
    return socket


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


def run(subscriptions: int, rate: float, seconds: float) -> dict[str, Any]:
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection

    from exchange.models import Subscription
    from exchange.services import subscriptions as service
    from exchange.services.tokens import token_issue
    from ops.stack import Stack

    rng = random.Random(35)
    load_start = os.getloadavg()
    owners = User.objects.bulk_create(  # no password: they never log in
        User(username=f"bench-alerts-{i}") for i in range(-(-subscriptions // service.MAX_ACTIVE))
    )
    token = token_issue(user=owners[0]).key  # a stream is its owner's alone
    queries = [_query(i, rng, True) for i in range(subscriptions)]
    stack = Stack(env=dict(os.environ), log_dir=ROOT / "test-artifacts" / "bench" / "alerts")
    frames: list[tuple[int, int, float]] = []
    lags: list[int] = []
    socket = None
    sampling = threading.Event()
    try:
        stack.start_worker(role="matching", concurrency=1)
        stack.start_worker(role="tasks", concurrency=1)
        engines = stack.start_subscription_engines(ENGINES)
        stack.start_beat()
        stack.start_server(ready_path="/healthz", ready_seconds=90)
        time.sleep(2)
        rss_before = sum(_rss_kb(e.pid) for e in engines)
        registering, first_bar = _register(owners, queries)
        registered = Subscription.objects.filter(state="active").count()
        # Until the engines hold every subscription and have caught up (a joiner joins
        # with the first event after it: one is appended every second meanwhile).
        joining = time.monotonic()
        deadline = joining + 900
        while time.monotonic() < deadline:
            for e in engines:
                stack.check_alive(e.name)
            beats = _beats()
            held = sum(s for _, s, _ in beats)
            if held >= registered and all(lag <= 2 for _, _, lag in beats):
                break
            _append(rng, 1)
            time.sleep(1)
        else:
            raise RuntimeError(f"the engines took {held} of {registered} subscriptions in 900 s")
        joined_s = time.monotonic() - joining
        time.sleep(2)
        rss_after = sum(_rss_kb(e.pid) for e in engines)
        followed = list(
            Subscription.objects.filter(owner=owners[0], kind="events", state="active")
            .order_by("pk")
            .values_list("pk", flat=True)[:FOLLOWED]
        )
        socket = _follow(stack.ws_url, token, followed, frames)

        def sample() -> None:
            try:
                while not sampling.is_set():
                    lags.append(max((lag for _, _, lag in _beats()), default=0))
                    sampling.wait(1.0)
            finally:
                connection.close()

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        spies = []
        if PROFILE:
            Path(PROFILE).mkdir(parents=True, exist_ok=True)
            spies = [
                subprocess.Popen(
                    [str(Path(sys.executable).parent / "py-spy"), "record", "--format", "raw"]
                    + ["-r", "50", "-d", str(int(seconds))]
                    + ["-o", f"{PROFILE}/engine{i}-{subscriptions}.txt", "--pid", str(e.pid)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for i, e in enumerate(engines)
            ]
        cpu = [_cpu_s(e.pid) for e in engines]
        head, n = produce(rng, rate, seconds)
        ended = time.monotonic()
        cpu = [_cpu_s(e.pid) - before for e, before in zip(engines, cpu, strict=True)]
        load_run = os.getloadavg()

        def wanted() -> set[tuple[int, int]]:
            """The followed subscriptions' notifications of the appended events."""
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT n.subscription_id, n.seq FROM exchange_subscriptionnotification n "
                    "WHERE n.seq > %s AND n.subscription_id = ANY(%s)",
                    [head, followed],
                )
                return set(cursor.fetchall())

        drain = time.monotonic() + 120
        while time.monotonic() < drain:
            got = {(s, q) for s, q, _ in frames if q > head}
            if max((lag for _, _, lag in _beats()), default=0) <= 2 and wanted() <= got:
                break
            time.sleep(0.2)
        drained = time.monotonic() - ended
        sampling.set()
        sampler.join(5)
        for spy in spies:
            spy.wait(30)
    finally:
        sampling.set()
        if socket is not None:
            socket.close()
        stack.stop()
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
    row_delays = [float(d) for _, _, _, d in rows]
    return {
        "subscriptions": subscriptions,
        "registered": registered,
        "engines": ENGINES,
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
        "notifications": len(rows),
        "notifications_per_s": round(len(rows) / seconds),
        "followed": len(followed),
        "frames": len(frame_delays),
        "frame": _quantiles(frame_delays),
        "row": _quantiles(row_delays),
        # the engines' CPU while the trades were appended: what they need of a core each
        "engine_cpu_s": [round(c, 1) for c in cpu],
        "lag_max": max(lags, default=0),
        "lag_last": lags[-1] if lags else 0,
        "lags": lags,
        "drain_s": round(drained, 1),
        "load_start": [round(x, 2) for x in load_start],
        "load_run": [round(x, 2) for x in load_run],
        "load_end": [round(x, 2) for x in os.getloadavg()],
    }


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
) -> dict[str, Any]:
    """Each size on a fresh bench database and stack of its own."""
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out |= {"cpu": machine._cpu_model(), "cores": os.cpu_count(), "commit": _commit()}
    out["runs"] = []
    for size in sizes or (QUICK if quick else SIZES):
        url = fresh_database(DATABASE)
        argv = [sys.executable, __file__, "--run", "--sizes", str(size)]
        argv += ["--rate", str(rate), "--seconds", str(10 if quick else seconds)]
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
    ap.add_argument("--run", action="store_true", help="(internal) one size in this database")
    args = ap.parse_args()
    if args.run:
        django.setup()
        print(json.dumps(run(args.sizes[0], args.rate, args.seconds)))
        return 0
    print(json.dumps(measure(sizes=args.sizes, rate=args.rate, seconds=args.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
