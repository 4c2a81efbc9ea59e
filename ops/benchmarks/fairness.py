"""Another user's alert beside an offender, on the real stack (issue 37, "anyone stalls
everyone's alerts"): ``ops/bench fairness`` or

    .venv/bin/python ops/benchmarks/fairness.py [--seconds S] [--rate R] [--offender N]

Two runs, each on a fresh bench database (``intersect_bench_fairness``, migrated) with its
own stack on loopback (``ops/stack.py``: uvicorn, the Celery matching and tasks workers
and beat, one ``manage.py subscription_engine`` process):

* *alone*: a victim registers one atomic trade alert over REST and follows its
  ``sub:<id>`` stream on the WebSocket;
* *offender*: the same, and another user registers ``N`` (default 100, the most a user
  may keep active) heavy subscriptions over REST, alternately issue 37's two probes: a
  composite join of three aliases with no equality among them, and
  ``SELECT * FROM a AND b WHERE a.start_time = NOW - 7d, b.seq = 0``.

Once the engine has every subscription in its set, trades are appended to the log at
``R`` a second for ``S`` seconds (each append wakes the engine through Redis). For each of
the victim's notifications: its ``sub:<id>`` frame's arrival (this process's clock) minus
its event's log time (``exchange_event.time``, the same machine's clock), p50, p99 and
max; and the notification row's commit time minus the event's time (the engine's share).
Prints one JSON line.
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
from typing import Any

import django
import httpx

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ops.benchmarks import machine
from ops.benchmarks.follow import Frame, follow, quantiles
from ops.benchmarks.history import _env, fresh_database
from ops.benchmarks.report.doc import splice_section
from ops.benchmarks.subscription_engine import _append, produce

DATABASE = "intersect_bench_fairness"
TITLE = "## Fairness: another user's alert beside an offender"
ALERT = "SELECT price WHERE type = 'trade'"
# Issue 37's probes (tests/subscriptions/test_limits.py's NO_EQUALITY, and the state one).
HEAVY = [
    "SELECT * FROM a AND b AND c WHERE a.price <= b.price, b.price <= c.price, "
    "c.price < a.price, a.type = 'trade', b.type = 'trade', c.type = 'trade'",
    "SELECT * FROM a AND b WHERE a.start_time = NOW - 7d, b.seq = 0",
]


def _register(url: str, token: str, query: str) -> int:
    answer = httpx.post(
        f"{url}/api/v1/subscriptions/",
        json={"query": query},
        headers={"Authorization": f"Token {token}"},
        timeout=60,
    )
    if answer.status_code != 201:
        raise RuntimeError(f"registering {query!r}: {answer.status_code} {answer.text[:300]}")
    return int(answer.json()["id"])


def run(offender: int, rate: float, seconds: float) -> dict[str, Any]:
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.contrib.auth.models import User
    from django.db import connection

    from exchange.models import SubscriptionEngineProcess
    from exchange.services.tokens import token_issue
    from ops.stack import Stack

    rng = random.Random(37)
    victim = User.objects.create(username="bench-victim")
    bad = User.objects.create(username="bench-offender")
    victim_token, bad_token = token_issue(user=victim).key, token_issue(user=bad).key
    stack = Stack(env=dict(os.environ), log_dir=ROOT / "test-artifacts" / "bench" / "fairness")
    frames: list[Frame] = []
    socket = None
    try:
        stack.start_worker(role="matching", concurrency=1)
        stack.start_worker(role="tasks", concurrency=1)
        (engine,) = stack.start_subscription_engines(1)
        stack.start_beat()
        stack.start_server(ready_path="/healthz", ready_seconds=90)  # 200 once all answer
        alert = _register(stack.url, victim_token, ALERT)
        socket = follow(stack.ws_url, victim_token, [alert], frames, confirm_seconds=30)
        started = time.perf_counter()
        for i in range(offender):
            _register(stack.url, bad_token, HEAVY[i % len(HEAVY)])
        registering = time.perf_counter() - started
        # Until the engine has every subscription in its set and has caught up (a joiner
        # joins with the first event after it: one is appended every second meanwhile).
        deadline = time.monotonic() + 60
        name = f"engine0-{os.getpid()}"
        while time.monotonic() < deadline:
            stack.check_alive(engine.name)
            beat = SubscriptionEngineProcess.objects.filter(name=name).first()
            if beat is not None and beat.subscriptions >= 1 + offender and beat.lag <= 2:
                break
            _append(rng, 1)
            time.sleep(1)
        else:
            raise RuntimeError(
                f"the engine did not take the subscriptions in 60 s:\n{engine.tail()}"
            )
        head, n = produce(rng, rate, seconds)
        ended = time.monotonic()
        # Until every event's frame has come (each trade fires the alert), 30 s at most.
        drain = time.monotonic() + 30
        while time.monotonic() < drain and sum(1 for _, s, _ in frames if s > head) < n:
            time.sleep(0.2)
        drained = time.monotonic() - ended
    finally:
        if socket is not None:
            socket.close()
        stack.stop()
    arrivals = {seq: at for _, seq, at in frames if seq > head}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.seq, extract(epoch FROM e.time), extract(epoch FROM n.created_at - e.time) "
            "FROM exchange_subscriptionnotification n JOIN exchange_event e ON e.seq = n.seq "
            "WHERE n.subscription_id = %s AND n.seq > %s",
            [alert, head],
        )
        rows = cursor.fetchall()
    frame_delays = [arrivals[seq] - float(t) for seq, t, _ in rows if seq in arrivals]
    row_delays = [float(d) for _, _, d in rows]
    return {
        "offender_subscriptions": offender,
        "registering_s": round(registering, 1),
        "events": n,
        "rate": rate,
        "seconds": seconds,
        "notifications": len(rows),
        "frames": len(frame_delays),
        "drain_s": round(drained, 1),
        "frame": quantiles(frame_delays),
        "row": quantiles(row_delays),
        "load": round(os.getloadavg()[0], 2),
    }


def measure(*, seconds: float = 20, rate: float = 10, offender: int = 100) -> dict[str, Any]:
    """Both runs, each on a fresh bench database and stack of its own."""
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out["cpu"] = machine.cpu_model()
    out["cores"] = os.cpu_count()
    for key, count in (("alone", 0), ("offender", offender)):
        url = fresh_database(DATABASE)
        argv = [sys.executable, __file__, "--run", "--offender", str(count)]
        argv += ["--rate", str(rate), "--seconds", str(seconds)]
        done = subprocess.run(argv, cwd=ROOT, env=_env(url), capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"the {key} run failed:\n{done.stderr[-3000:]}")
        out[key] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _cell(r: dict[str, Any], part: str) -> str:
    q = r[part]
    return f"{q['p50_ms']} / {q['p99_ms']} / {q['max_ms']}"


def section(r: dict[str, Any]) -> str:
    """The report's section for ``measure``'s result."""
    rows = [
        "| run | offender's subscriptions | events | victim's frames (rows) | "
        "event to `sub:` frame, ms p50 / p99 / max | event to notification row, ms p50 / p99 / max "
        "| load (1 min) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key in ("alone", "offender"):
        x = r[key]
        rows.append(
            f"| {key} | {x['offender_subscriptions']} | {x['events']} | "
            f"{x['frames']} ({x['notifications']}) | {_cell(x, 'frame')} | {_cell(x, 'row')} | "
            f"{x['load']} |"
        )
    a = r["offender"]
    return "\n".join(
        [
            TITLE + " (issue 37)",
            "",
            f"`ops/bench fairness`, {r['date']}, {r['cpu']} ({r['cores']} cores), on loopback. The machine "
            "was shared by other engineers' tests while it ran (the load average beside each "
            "run). Each run: a fresh bench database, its own stack (uvicorn, Celery's matching "
            "and tasks workers and beat, one `manage.py subscription_engine` process); a victim's one atomic alert "
            f"(`{ALERT}`) registered over REST and followed on its `sub:<id>` stream; trades "
            f"appended to the log at {a['rate']:g} a second for {a['seconds']:g} s once the "
            "engine held every subscription. In the second run another user also registered "
            f"{a['offender_subscriptions']} heavy subscriptions over REST (in "
            f"{a['registering_s']} s), alternately issue 37's two probes: a join of three "
            "aliases with no equality among them (`SELECT * FROM a AND b AND c WHERE a.price "
            "<= b.price, b.price <= c.price, c.price < a.price, ...`) and `SELECT * FROM a AND "
            "b WHERE a.start_time = NOW - 7d, b.seq = 0`. Delays are from the event's log time "
            "to the frame's arrival at the client, and to the notification row's commit.",
            "",
            *rows,
            "",
        ]
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rate", type=float, default=10)
    ap.add_argument("--offender", type=int, default=100)
    ap.add_argument("--run", action="store_true", help="(internal) one run in this database")
    args = ap.parse_args()
    if args.run:
        django.setup()
        print(json.dumps(run(args.offender, args.rate, args.seconds)))
        return 0
    print(json.dumps(measure(seconds=args.seconds, rate=args.rate, offender=args.offender)))
    return 0


def splice(report: Path, results: dict[str, Any]) -> Path:
    return splice_section(report, TITLE, section(results))


if __name__ == "__main__":
    sys.exit(main())
