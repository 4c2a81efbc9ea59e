"""The live bench's stack started and one load driven on it: what ``ops/bench_live.py``
(a run, a sweep, ``--aged``) and ``ops/benchmarks/alerts.py --bid-path`` share."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from ops.benchmarks.live import checks, load
from ops.stack import Stack


def start(stack: Stack, *, port: int = 0, web_workers: int = 2, socket_workers: int = 1) -> None:
    """The stack ``ops/run`` starts (the workers, the subscription engines of the stack's
    ``SUBSCRIPTION_ENGINE_PROCESSES``, beat and the web tier), on ``port``, else on a free
    port (``stack.port`` says which: two worktrees' runs never meet on one)."""
    stack.start_workers()
    stack.start_beat()
    # /healthz answers 200 once the workers do too.
    stack.start_server(
        port=port or None,
        workers=web_workers,
        socket_workers=socket_workers,
        ready_path="/healthz",
        ready_seconds=120,
    )


def drive_rate(
    stack: Stack,
    *,
    offers: int,
    rate: float,
    seconds: float,
    readers: float,
    seed: int,
    tokens: list[str],
    timeline: Path | None = None,
) -> dict[str, Any]:
    """One load of ``rate`` bids/s on the running stack; its numbers and the cycles that
    started during it (the best-offer check is left to the caller: it reads every order).
    ``timeline``: a file to write each bid's times into (its POST, 201 and frame, its
    change row, and its cycle's start and end)."""
    floor = checks.best_value_cents()
    since = time.time()
    result = asyncio.run(
        load.drive(stack.port, offers, rate, seconds, readers, seed, floor, tokens)
    )
    time.sleep(3)  # the last cycles and pushes
    stored = checks.stored(result["acknowledged"])
    marks = checks.stage_marks(result["timeline"])
    stages = checks.stage_split(result["timeline"], marks)
    if timeline is not None:
        # Each bid's marks, to find when in the run a stage's tail came (``--timeline``).
        rows = [{**t, "marks": marks.get(int(t["id"]))} for t in result["timeline"]]
        timeline.write_text(json.dumps({"rate": rate, "since": since, "bids": rows}))
    return {
        "rate": rate,
        "frame_ms": load.spread(result["latencies"]),
        "ack_ms": load.spread(result["acks"]),
        "stages_ms": {name: load.spread(values) for name, values in stages.items()},
        "frames": len(result["latencies"]),
        "unanswered": result["unanswered"],
        "lost_frames": checks.announced(result["unseen_ids"]),
        "bids_sent": result["bids_sent"],
        "acknowledged": len(result["acknowledged"]),
        "stored": stored,
        "reads": result["reads"],
        "errors": len(result["errors"]),
        "first_errors": result["errors"][:10],
        "achieved_rate": result["bids_sent"] / result["elapsed"],
        "cycles": checks.cycle_stats(since, until=time.time()),
        "load_average": os.getloadavg(),
    }
