"""Each step of one subscription engine, timed (issue 35 item 7): after ``ops/benchmarks/alerts.py``
has left its database (``intersect_bench_alerts``, its subscriptions registered), run

    .venv/bin/python ops/benchmarks/engine_steps.py [--seconds 30] [--rate 50]
        [--spread S] [--no-heap]

One engine in this process takes every partition and joins every subscription; then, with a
checkpoint round due at once (``SUBSCRIPTION_ENGINE_CHECKPOINT_SECONDS`` taken as
``--seconds``), trades are appended at ``--rate`` a second, or as fast as the engine takes
them when it is slower, and each ``Engine.step`` is timed. After each step the process's heap
is settled as the runner settles it (``collector.EngineHeap``) unless ``--no-heap``;
``--spread`` sets the round's spread (``Engine(checkpoint_spread=...)``; 0 stores a whole
slice every batch). Prints one JSON object: the steps' wall-time quantiles, the events taken,
the engine's CPU, how many steps a round was under way in, and each generation's garbage
collections (count, total and longest, from ``gc.callbacks``). Compare two settings or
commits alternately: the machine is shared. This is how the engine's stalls were found
(``docs/benchmarks.md``, *Where the 30,000 p99 went*); py-spy can be attached to the
process once it prints that it holds every subscription.
"""

from __future__ import annotations

import argparse
import gc
import json
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

from ops.benchmarks.alerts import DATABASE
from ops.benchmarks.history import _env
from ops.benchmarks.live import provision


def _quantile(values: list[float], q: float) -> float:
    return round(sorted(values)[min(len(values) - 1, int(q * len(values)))], 1)


def measure(seconds: float, rate: float, spread: float | None, heap: bool) -> dict[str, Any]:
    """The steps of one engine over ``seconds`` of trades at ``rate`` (see the module
    docstring)."""
    # Django's: this runs in the --run process, after django.setup() (main)
    from django.db import connection

    from exchange.collector import EngineHeap
    from exchange.models import Subscription
    from exchange.subscription_engine.engine import Engine
    from ops.benchmarks.subscription_engine import _append

    with connection.cursor() as cursor:  # every partition free for this one process
        cursor.execute("UPDATE exchange_subscriptionpartition SET owner = '', expires_at = NULL")
        cursor.execute("DELETE FROM exchange_subscriptionengineprocess")
    engine = Engine(
        "engine-steps",
        checkpoint_events=10**9,
        checkpoint_seconds=seconds,
        checkpoint_spread=spread,
    )
    active = Subscription.objects.filter(state="active").count()
    while engine.step() or len(engine.followed) < active:
        pass
    print(f"holding {len(engine.followed)} subscriptions (pid {os.getpid()})", flush=True)
    settled = EngineHeap() if heap else None
    collections: list[tuple[int, float]] = []
    started = [0.0]

    def timed(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            collections.append((info["generation"], (time.perf_counter() - started[0]) * 1000))

    gc.callbacks.append(timed)
    rng = random.Random(1)
    steps: list[float] = []
    in_round = events = 0
    cpu = time.process_time()
    engine._checkpointed = time.monotonic() - seconds  # a round due at the first step
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        lag = start + events / rate - time.monotonic()
        if lag > 0:
            time.sleep(lag)
        _append(rng, 1)
        events += 1
        more = True
        while more:
            in_round += engine._round is not None
            began = time.perf_counter()
            more = engine.step()
            if settled is not None:
                settled.settle(dropped=engine.dropped, followed=len(engine.followed))
            steps.append((time.perf_counter() - began) * 1000)
    gc.callbacks.remove(timed)
    return {
        "subscriptions": len(engine.followed),
        "spread_s": engine.checkpoint_spread,
        "heap_settled": heap,
        "events": events,
        "steps": len(steps),
        "steps_in_a_round": in_round,
        "round_done": engine._round is None,
        "step_ms": {
            "p50": _quantile(steps, 0.5),
            "p90": _quantile(steps, 0.9),
            "p99": _quantile(steps, 0.99),
            "max": round(max(steps), 1),
        },
        "engine_cpu_s": round(time.process_time() - cpu, 2),
        "collections": {
            str(generation): {
                "count": len(times),
                "total_ms": round(sum(times), 1),
                "max_ms": round(max(times, default=0.0), 1),
            }
            for generation in (0, 1, 2)
            for times in [[ms for g, ms in collections if g == generation]]
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=50.0, help="trades appended a second, at most")
    ap.add_argument("--spread", type=float, default=None, help="a round's spread, s (0: none)")
    ap.add_argument("--no-heap", dest="heap", action="store_false", help="no EngineHeap")
    ap.add_argument("--run", action="store_true", help="(internal) in the bench database")
    args = ap.parse_args()
    if args.run:
        django.setup()
        print(json.dumps(measure(args.seconds, args.rate, args.spread, args.heap), indent=1))
        return 0
    argv = [sys.executable, __file__, "--run", "--seconds", str(args.seconds)]
    argv += ["--rate", str(args.rate)] + ([] if args.heap else ["--no-heap"])
    argv += [] if args.spread is None else ["--spread", str(args.spread)]
    url = provision._with_path(provision.SERVER_URL, DATABASE)
    env = _env(url) | {"LOG_LEVEL": "WARNING", "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
