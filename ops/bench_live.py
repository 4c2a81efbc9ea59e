#!/usr/bin/env python3
"""The live benchmark (SPEC 9): a bid sent over REST to its ``best_offer`` frame on a WebSocket.

    .venv/bin/python ops/bench_live.py [--offers 10000] [--bids 100000] [--rate 50] [--seconds 60]
                                       [--readers 20] [--out docs/benchmarks-live.md]

It builds a separate database ``intersect_bench`` on the development cluster (ops/services
start) holding ``--offers`` open offers and ``--bids`` active bids in the pencils market
(``manage.py bench_book``), starts uvicorn, a Celery worker and beat against it (Redis database
1, so nothing mixes with a running ops/run), then for ``--seconds`` sends ``--rate`` bids per
second over REST, each one built to become the best bid of a chosen offer, while ``--readers``
requests per second read offers and the best-offer table. Latency is measured from just before
each POST to the arrival of the ``best_offer`` frame announcing that bid's value on that
offer's stream. It checks that every acknowledged bid is in the database and that the
best-offer table is correct afterwards, and writes the results to ``--out``. Loopback only.
The parts live in ``ops/benchmarks/live/`` and ``ops/stack.py``.

``--aged N`` (issue 36 item 1): the load, then a long mixed run over REST (``N`` bids placed,
amended, half withdrawn, ``N`` subscriptions created and deleted: ``live/aged.py``), then the
same load again, both reported side by side. ``--sweep`` and ``--request-costs``: see their
help. The web tier listens on a free port unless ``--port`` names one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ops.benchmarks import machine
from ops.benchmarks.live import aged, checks, costs, load, provision, report, runs
from ops.stack import Stack

# ``--aged`` without a count: about what a day of other work had done to the database in
# issue 36 (8,000 bids, 4,000 subscriptions made and deleted, 20,000 log events).
AGED_COUNT = 4000
# Seconds of load on the stack just started before the measured runs, not counted (``warm``).
WARMUP_SECONDS = 5.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="end-to-end latency and load benchmark")
    parser.add_argument("--offers", type=int, default=10_000)
    parser.add_argument("--bids", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--readers", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--port",
        type=int,
        default=0,
        help="the web tier's port (default: a free one, so that two worktrees' runs never "
        "meet on one port)",
    )
    parser.add_argument(
        "--web-workers", type=int, default=2, help="HTTP processes (WEB_WORKERS, as ops/run)"
    )
    parser.add_argument(
        "--socket-workers",
        type=int,
        default=1,
        help="WebSocket processes the HTTP ones hand the sockets to (SOCKET_WORKERS; 1, as "
        "ops/run; 0: the HTTP processes serve the sockets too)",
    )
    parser.add_argument("--out", help="also write the result as a short Markdown report here")
    parser.add_argument("--json", help="write the result as JSON here (ops/bench reads it)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the book of a previous run (its bids stay) instead of building it again",
    )
    parser.add_argument(
        "--sweep",
        type=sweep_rates,
        help="rising rates (50,100,150,...): the same load at each, on one stack, until one "
        "misses p99 500 ms or has an error; the table goes to ops/benchmarks/results/"
        "live-sweep.json (or --json) and into docs/benchmarks.md",
    )
    parser.add_argument(
        "--aged",
        type=int,
        nargs="?",
        const=AGED_COUNT,
        metavar="N",
        help="the load, then a mixed run over REST (N bids placed, each amended, every other "
        f"one withdrawn; N subscriptions created and deleted; N {AGED_COUNT:,} unless given), "
        "then the load again: both runs "
        "side by side (issue 36 item 1) in ops/benchmarks/results/live-aged.json (or --json) "
        "and docs/benchmarks.md",
    )
    parser.add_argument(
        "--aged-concurrency",
        type=int,
        default=16,
        help="with --aged: the mixed run's lifecycles in flight at once",
    )
    parser.add_argument(
        "--request-costs",
        type=int,
        metavar="N",
        help="instead of the load: each kind of request N times, one at a time, to one "
        "uvicorn process, with that process's CPU time per request "
        "(ops/benchmarks/live/costs.py); the table goes into docs/benchmarks.md",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=costs.ROUNDS,
        help="with --request-costs: the N requests of each kind go in this many blocks, "
        "taken in turn with the other kinds' (the figure is the blocks' median)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="with --request-costs: py-spy records the server during each kind of request "
        "into DIR/<kind>.txt (collapsed stacks); the table is then not written into "
        "docs/benchmarks.md, since py-spy's pauses are in its figures",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=WARMUP_SECONDS,
        metavar="SECONDS",
        help="the load at the first rate for this long once the stack is up, not counted "
        f"(default {WARMUP_SECONDS:g}, 0 for none)",
    )
    parser.add_argument(
        "--timeline",
        type=Path,
        metavar="DIR",
        help="write each bid's times (POST, 201, frame, change row, its cycle) of each rate "
        "into DIR/timeline-<rate>.json (the warm-up's -warmup.json, --aged's second run's "
        "-after.json), to see when in a run a stage's tail came",
    )
    parser.add_argument(
        "--keep-store",
        action="store_true",
        help="with --reuse: keep the engine's store too (the code has not changed since)",
    )
    args = parser.parse_args(argv)
    if args.aged is not None and (args.sweep or args.request_costs):
        parser.error("--aged runs one rate twice: not with --sweep or --request-costs")
    if args.aged is not None and args.aged <= 0:
        parser.error("--aged takes a positive count: --aged 4000")
    if args.warmup < 0:
        parser.error("--warmup takes seconds, 0 or more")
    if args.rounds < 1 or (args.request_costs is not None and args.request_costs < args.rounds):
        parser.error("--rounds takes 1 or more, and --request-costs at least one request a round")
    return args


def sweep_rates(text: str) -> list[float]:
    """``--sweep``'s rising rates, e.g. ``50,100,150``."""
    rates = [float(part) for part in text.split(",") if part.strip()]
    if not rates or any(r <= 0 for r in rates) or rates != sorted(rates):
        raise argparse.ArgumentTypeError("--sweep takes rising positive rates: 50,100,150")
    return rates


def drive(
    args: argparse.Namespace,
    stack: Stack,
    rate: float,
    tokens: list[str],
    label: str = "",
    seconds: float | None = None,
) -> Any:
    """One load of ``rate`` bids/s with this command's options (``runs.drive_rate``), for
    ``--seconds`` unless ``seconds`` says otherwise; ``label`` tells its timeline file from
    another run's at the same rate."""
    return runs.drive_rate(
        stack,
        offers=args.offers,
        rate=rate,
        seconds=args.seconds if seconds is None else seconds,
        readers=args.readers,
        seed=args.seed,
        tokens=tokens,
        timeline=args.timeline and args.timeline / f"timeline-{rate:g}{label}.json",
    )


def warm(args: argparse.Namespace, stack: Stack, tokens: list[str]) -> dict[str, Any]:
    """``--warmup`` seconds of the load at the first rate on the stack just started, not
    counted: its processes' first requests, cycles and pushes (connections opened,
    statements prepared, code paths run once) are the start's, not the rate's. In a
    120 bids/s sweep begun without it, the first second's cycles took 200 to 360 ms for what
    later took 12, and those 120 bids alone set the minute's p99. What it did goes into the
    report, its errors included."""
    if not args.warmup:
        return {"seconds": 0}
    rate = (args.sweep or [args.rate])[0]
    run = drive(args, stack, rate, tokens, label="-warmup", seconds=args.warmup)
    return {
        "seconds": args.warmup,
        "rate": rate,
        "bids": run["bids_sent"],
        "errors": run["errors"],
        "first_errors": run["first_errors"],
        "frame_ms": run["frame_ms"],
    }


def main() -> int:
    args = parse_args()
    if args.timeline:
        args.timeline.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if not args.reuse:
        provision.book_build(offers=args.offers, bids=args.bids, seed=args.seed)
    provision.book_refresh(rebuild=not (args.reuse and args.keep_store))
    checks.log_settle()
    checks.outbox_settle()
    if not args.reuse:
        provision.book_settle()
    book_offers, book_bids = checks.book_size()
    tokens = provision.tokens([f"buyer{i}" for i in range(load.BUYERS)])
    setup_s = time.perf_counter() - t0
    stack = Stack(env=provision.env(), log_dir=ROOT / ".data" / "bench-live", log_level="WARNING")
    # A SIGTERM (a timeout, say) unwinds through ``finally`` so the stack is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    done: list[dict[str, Any]] = []
    mixed: dict[str, Any] = {}
    warmup: dict[str, Any] = {"seconds": 0}
    if args.request_costs:
        return request_costs(args, stack, tokens[0], book_offers, book_bids)
    try:
        runs.start(
            stack,
            port=args.port,
            web_workers=args.web_workers,
            socket_workers=args.socket_workers,
        )
        warmup = warm(args, stack, tokens)
        for rate in args.sweep or [args.rate]:
            done.append(drive(args, stack, rate, tokens))
            if args.sweep and not report.held(done[-1]):
                break  # the first rate that does not hold ends the sweep
        if args.aged:
            mixed = asyncio.run(
                aged.mixed(
                    stack.port,
                    offers=args.offers,
                    count=args.aged,
                    concurrency=args.aged_concurrency,
                    seed=args.seed,
                    tokens=tokens,
                )
            )
            time.sleep(3)  # the mixed run's last cycles
            done.append(drive(args, stack, args.rate, tokens, label="-after"))
        verdict = checks.verified()
    finally:
        stack.stop()
    header = run_facts() | {
        "offers": book_offers,
        "bids": book_bids,
        "readers": args.readers,
        "seconds": args.seconds,
        "web_workers": args.web_workers,
        "socket_workers": args.socket_workers,
        "setup_s": setup_s,
        "warmup": warmup,
        "verify": verdict,
    }
    ok = "correct" in verdict
    if args.aged:
        return aged_report(args, header, mixed, done)
    if args.sweep:
        summary = header | {"runs": done}
        out = Path(args.json) if args.json else report.SWEEP_RESULTS
        out.write_text(json.dumps(summary, indent=1) + "\n")
        report.sweep_into(ROOT / "docs" / "benchmarks.md", summary)
        print(report.sweep_markdown(summary))
        return 0 if ok and any(report.held(r) for r in done) else 1
    (run,) = done
    summary = header | run
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    text = report.markdown(summary)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0 if ok and not run["errors"] and run["stored"] == run["acknowledged"] else 1


def aged_report(
    args: argparse.Namespace,
    header: dict[str, Any],
    mixed: dict[str, Any],
    done: list[dict[str, Any]],
) -> int:
    """``--aged``'s two runs and the mixed run between them, into
    ops/benchmarks/results/live-aged.json (or ``--json``) and docs/benchmarks.md."""
    before, after = done
    summary = header | {
        "rate": args.rate,
        "before": before,
        "mixed": mixed,
        "after": after,
        "book_after": list(checks.book_size()),
        "log_after": checks.log_head(),
    }
    out = Path(args.json) if args.json else report.AGED_RESULTS
    out.write_text(json.dumps(summary, indent=1) + "\n")
    report.aged_into(ROOT / "docs" / "benchmarks.md", summary)
    print(report.aged_markdown(summary))
    clean = all(not r["errors"] and r["stored"] == r["acknowledged"] for r in done)
    return 0 if "correct" in header["verify"] and clean and not mixed["errors"] else 1


def run_facts() -> dict[str, str]:
    """When, at which commit, by which command and on what machine this run ran."""
    host = machine.host()
    return {
        "date": host["date"],
        "commit": host["commit"],
        "command": " ".join([".venv/bin/python", "ops/bench_live.py", *sys.argv[1:]]),
        "machine": report.machine_line(host),
    }


def request_costs(
    args: argparse.Namespace, stack: Stack, token: str, offers: int, bids: int
) -> int:
    """``--request-costs``: the table of ``ops/benchmarks/live/costs.py``, into
    ops/benchmarks/results/request-costs.json and docs/benchmarks.md."""
    load_before = os.getloadavg()[0]
    try:
        stack.start_workers()
        server = stack.start_server(
            port=args.port or None,
            workers=1,
            socket_workers=args.socket_workers,
            ready_path="/healthz",
        )
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
        (http_process,) = server.children("web")
        measured = costs.measure(
            base_url=stack.url,
            pid=http_process,
            token=token,
            offers=offers,
            count=args.request_costs,
            rounds=args.rounds,
            profile=args.profile,
        )
    finally:
        stack.stop()
    summary = run_facts() | {
        "offers": offers,
        "bids": bids,
        "load": [load_before, os.getloadavg()[0]],
        **measured,
    }
    summary["count"] = measured["rows"][0]["count"]  # N rounded down to whole blocks
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    if not args.profile and not args.json:
        out = report.SWEEP_RESULTS.parent / "request-costs.json"
        out.write_text(json.dumps(summary, indent=1) + "\n")
        report.splice(
            ROOT / "docs" / "benchmarks.md", costs.BEGIN, costs.END, costs.markdown(summary)
        )
    print(costs.markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
