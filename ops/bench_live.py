#!/usr/bin/env python3
"""The live benchmark (SPEC 9): a bid sent over REST to its ``best_offer`` frame on a WebSocket.

    .venv/bin/python ops/bench_live.py [--offers 10000] [--bids 100000] [--rate 50] [--seconds 60]
                                       [--readers 20] [--out docs/benchmarks-live.md]

It builds a separate database ``intersect_bench`` on the development cluster (ops/services
start), loads ``--offers`` open offers and ``--bids`` active bids in the pencils market, starts
uvicorn, a Celery worker and beat against it (Redis database 1, so nothing mixes with a running
ops/run), then for ``--seconds`` sends ``--rate`` bids per second over REST, each one built to
become the best bid of a chosen offer, while ``--readers`` requests per second read offers and
the best-offer table. Latency is measured from just before each POST to the arrival of the
``best_offer`` frame announcing that bid's value on that offer's stream. It checks that every
acknowledged bid is in the database and that the best-offer table is correct afterwards, and
writes the results to ``--out``. Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
DB = "intersect_bench"
SUBJECT = "office.supplies.pencils"


def env() -> dict[str, str]:
    out = dict(os.environ)
    out.update(
        DJANGO_SETTINGS_MODULE="exchange.settings.development",
        DJANGO_DEBUG="0",
        DATABASE_URL=f"postgres://intersect:intersect@127.0.0.1:55432/{DB}",
        REDIS_URL="redis://127.0.0.1:56379/1",
        LOG_LEVEL="WARNING",
        THROTTLE_USER="100000/min",
        THROTTLE_ANON="100000/min",
        THROTTLE_AUTH="100000/min",
    )
    return out


def manage(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env(), check=True, **kwargs)


def prepare(offers: int, bids: int, seed: int) -> None:
    """A fresh bench database with ``offers`` open offers and ``bids`` active bids."""
    admin = "postgres://intersect:intersect@127.0.0.1:55432/intersect"
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB}"')
    manage("migrate", "-v", "0")
    script = f"""
import random
from decimal import Decimal
from django.contrib.auth import get_user_model
from django.db import transaction
from exchange.models import Bid, BestOffer, Offer, OrderChange
from exchange.services.markets import market_create
from exchange.market_rules import order_constraint
from exchange.selectors.markets import market_schema
from django.utils import timezone
rng = random.Random({seed})
User = get_user_model()
market = market_create(subject="{SUBJECT}", title="Pencils", tick="0.01", schema=[
    {{"name": "lot", "type": "int", "label": "Lot", "unit": "", "required_on_offer": True, "required_on_bid": False, "role": "quantity"}},
    {{"name": "price", "type": "decimal", "label": "Price", "unit": "", "required_on_offer": True, "required_on_bid": True, "role": "price"}}])
schema = market_schema(market=market)
sellers = [User.objects.create_user(f"seller{{i}}", password="bench-pass-1") for i in range(20)]
buyers = [User.objects.create_user(f"buyer{{i}}", password="bench-pass-1") for i in range(50)]
now = timezone.now()
def rules(side, text):
    return order_constraint(schema=schema, tick=market.tick, side=side, source=text)
with transaction.atomic():
    offers = []
    for i in range({offers}):
        lot = i * 100 + 1
        r = rules("offer", f"lot BETWEEN {{lot}} AND {{lot + 49}} AND price >= 1.00")
        offers.append(Offer(market=market, seller=sellers[i % 20], constraint_text=r.text, constraint_json=r.json))
    offers = Offer.objects.bulk_create(offers, batch_size=5000)
    BestOffer.objects.bulk_create([BestOffer(offer=o, changed_at=now) for o in offers], batch_size=5000)
    bids = []
    for i in range({bids}):
        lot = rng.randrange(1, {offers} * 100)
        r = rules("bid", f"lot = {{lot}} AND price <= 1.{{rng.randrange(0, 50):02d}}")
        bids.append(Bid(market=market, buyer=buyers[i % 50], constraint_text=r.text, constraint_json=r.json))
    Bid.objects.bulk_create(bids, batch_size=5000)
"""
    manage("shell", "-c", script)


class Stack:
    def __init__(self, port: int, web_workers: int = 2):
        self.port = port
        self.web_workers = web_workers
        self.logs = ROOT / ".data" / "bench-live"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.procs: list[subprocess.Popen] = []

    def start(self) -> None:
        bin_ = Path(PY).parent
        specs = {
            "server": [
                str(bin_ / "uvicorn"),
                "exchange.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
                "--no-access-log",
                "--workers",
                str(self.web_workers),
            ],
            "worker": [
                str(bin_ / "celery"),
                "-A",
                "exchange",
                "worker",
                "--loglevel",
                "WARNING",
                "--concurrency",
                "2",
                "--hostname",
                f"bench-{os.getpid()}@%h",
            ],
            "beat": [
                str(bin_ / "celery"),
                "-A",
                "exchange",
                "beat",
                "--loglevel",
                "WARNING",
                "--schedule",
                str(self.logs / "celerybeat"),
            ],
        }
        for name, argv in specs.items():
            log = (self.logs / f"{name}.log").open("w")
            self.procs.append(
                subprocess.Popen(
                    argv,
                    cwd=ROOT,
                    env=env(),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise SystemExit("the bench stack did not become healthy; see .data/bench-live/")

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


async def drive(
    port: int, offers: int, rate: float, seconds: float, readers: float, seed: int
) -> dict:
    base = f"http://127.0.0.1:{port}/api/v1"
    rng = random.Random(seed + 1)
    async with httpx.AsyncClient(base_url=base, timeout=30) as anon:
        tokens = []
        for i in range(50):
            r = await anon.post(
                "/auth/token/", json={"username": f"buyer{i}", "password": "bench-pass-1"}
            )
            tokens.append(r.json()["token"])
        first_offer = (await anon.get("/offers/?state=open&limit=1")).json()["results"][0]["id"]
    sent: dict[tuple[int, str], float] = {}
    latencies: list[float] = []
    acknowledged: list[int] = []
    acks: list[float] = []  # milliseconds from sending a bid to its 201
    errors: list[str] = []
    reads = 0
    prices: dict[int, int] = {}
    floor = best_value_cents()  # every new bid beats every best bid already in the book

    async def listen(ws) -> None:
        async for raw in ws:
            frame = json.loads(raw)
            if frame.get("type") != "best_offer":
                continue
            key = (frame["data"]["offer"], frame["data"]["best_value"])
            started = sent.pop(key, None)
            if started is not None:
                latencies.append((time.perf_counter() - started) * 1000)

    async def bid(client: httpx.AsyncClient, token: str, offer_index: int) -> None:
        offer_id = first_offer + offer_index
        cents = prices.get(offer_id, floor) + 1
        prices[offer_id] = cents
        value = f"{Decimal(cents) / 100:.2f}"
        lot = offer_index * 100 + 1 + rng.randrange(0, 50)
        posted = sent[(offer_id, value)] = time.perf_counter()
        try:
            r = await client.post(
                "/bids/",
                json={"market": SUBJECT, "constraint": f"lot = {lot} AND price <= {value}"},
                headers={"Authorization": f"Token {token}"},
            )
        except httpx.HTTPError as exc:
            errors.append(f"bid: {exc!r}")
            return
        if r.status_code == 201:
            acknowledged.append(r.json()["id"])
            acks.append((time.perf_counter() - posted) * 1000)
        else:
            errors.append(f"bid: {r.status_code} {r.text[:100]}")

    async def read(client: httpx.AsyncClient) -> None:
        nonlocal reads
        path = rng.choice(
            [
                "/best-offers/?limit=50",
                f"/offers/{first_offer + rng.randrange(offers)}/",
                "/markets/",
            ]
        )
        try:
            r = await client.get(path)
            if r.status_code != 200:
                errors.append(f"read {path}: {r.status_code}")
            reads += 1
        except httpx.HTTPError as exc:
            errors.append(f"read: {exc!r}")

    async with websockets.connect(f"ws://127.0.0.1:{port}/ws/", max_queue=None) as ws:
        await ws.send(json.dumps({"action": "subscribe", "stream": f"market:{SUBJECT}"}))
        await ws.recv()
        listener = asyncio.create_task(listen(ws))
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:
            tasks = []
            start = time.perf_counter()
            n_bids = int(rate * seconds)
            n_reads = int(readers * seconds)
            schedule = sorted(
                [(i / rate, "bid", i) for i in range(n_bids)]
                + [(i / readers, "read", i) for i in range(n_reads)]
                if readers
                else [(i / rate, "bid", i) for i in range(n_bids)]
            )
            for at, kind, i in schedule:
                delay = start + at - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                if kind == "bid":
                    tasks.append(
                        asyncio.create_task(bid(client, tokens[i % 50], rng.randrange(offers)))
                    )
                else:
                    tasks.append(asyncio.create_task(read(client)))
            await asyncio.gather(*tasks)
            elapsed = time.perf_counter() - start
        deadline = time.monotonic() + 30
        while sent and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        listener.cancel()
    return {
        "latencies": latencies,
        "acknowledged": acknowledged,
        "acks": acks,
        "errors": errors,
        "reads": reads,
        "elapsed": elapsed,
        "unanswered": len(sent),
        "bids_sent": n_bids,
    }


def one_row(query: str, params: list[object] | None = None) -> tuple[Any, ...]:
    """The single row of an aggregate query on the bench database."""
    import psycopg

    with psycopg.connect(env()["DATABASE_URL"].replace("postgres://", "postgresql://")) as conn:
        row = conn.execute(query, params).fetchone()
    if row is None:
        raise RuntimeError(f"no row from {query!r}")
    return tuple(row)


def best_value_cents() -> int:
    """The highest best value in the book, in cents (the book's own bids stop at 1.49; a
    reused book also holds the bids of earlier runs)."""
    (top,) = one_row("SELECT max(value) FROM exchange_bestoffer")
    return max(150, int(top * 100) if top is not None else 0)


def book_size() -> tuple[int, int]:
    """Open offers and active bids in the book now (a reused book holds earlier runs' bids)."""
    offers, bids = one_row(
        "SELECT (SELECT count(*) FROM exchange_offer WHERE state = 'open'),"
        " (SELECT count(*) FROM exchange_bid WHERE state = 'active')"
    )
    return int(offers), int(bids)


def settle_outbox() -> None:
    """Mark the setup's notifications delivered: nobody listens for them, and the sweep would
    otherwise push tens of thousands of them during the measurement."""
    import psycopg

    with psycopg.connect(env()["DATABASE_URL"].replace("postgres://", "postgresql://")) as conn:
        conn.execute(
            "UPDATE exchange_notification SET delivered_at = now() WHERE delivered_at IS NULL"
        )


def cycle_stats(since: float) -> dict[str, float]:
    """The matching cycles that ran during the measurement."""
    count, mean_ms, mean_changes, max_ms = one_row(
        "SELECT count(*), coalesce(avg(extract(epoch FROM finished_at - started_at)) * 1000, 0),"
        " coalesce(avg(changes), 0), coalesce(max(extract(epoch FROM finished_at - started_at))"
        " * 1000, 0) FROM exchange_matchingcycle WHERE started_at >= to_timestamp(%s)",
        [since],
    )
    return {
        "count": count,
        "mean_ms": float(mean_ms),
        "mean_changes": float(mean_changes),
        "max_ms": float(max_ms),
    }


def verify(acknowledged: list[int]) -> tuple[int, str]:
    """How many acknowledged bids are stored, and the verdict of ``verify_best_offers``."""
    (stored,) = one_row("SELECT count(*) FROM exchange_bid WHERE id = ANY(%s)", [acknowledged])
    check = subprocess.run(
        [PY, "manage.py", "verify_best_offers"], cwd=ROOT, env=env(), capture_output=True, text=True
    )
    return stored, (check.stdout + check.stderr).strip().splitlines()[-1]


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem = int(
        next(
            line.split()[1]
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    ) // (1024 * 1024)
    return f"{os.cpu_count()} cores ({cpu}), {mem} GiB RAM, {platform.platform()}"


def main() -> int:
    parser = argparse.ArgumentParser(description="end-to-end latency and load benchmark")
    parser.add_argument("--offers", type=int, default=10_000)
    parser.add_argument("--bids", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--readers", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--web-workers", type=int, default=2, help="uvicorn worker processes (as ops/run)"
    )
    parser.add_argument("--out", help="also write the result as a short Markdown report here")
    parser.add_argument("--json", help="write the result as JSON here (ops/bench reads it)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the book of a previous run (its bids stay) instead of building it again",
    )
    args = parser.parse_args()

    t0 = time.perf_counter()
    if not args.reuse:
        prepare(args.offers, args.bids, args.seed)
    manage("migrate", "-v", "0")
    manage("engine_rebuild")  # the store's layout may have changed since the book was built
    settle_outbox()
    book_offers, book_bids = book_size()
    setup_s = time.perf_counter() - t0
    stack = Stack(args.port, args.web_workers)
    # A SIGTERM (a timeout, say) unwinds through ``finally`` so the stack is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stack.start()
    driven_from = time.time()
    try:
        result = asyncio.run(
            drive(args.port, args.offers, args.rate, args.seconds, args.readers, args.seed)
        )
        time.sleep(3)
        stored, verdict = verify(result["acknowledged"])
        cycles = cycle_stats(driven_from)
    finally:
        stack.stop()
    lat, acks = result["latencies"], result["acks"]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()

    def spread(values: list[float]) -> dict[str, float] | None:
        if not values:
            return None
        return {q: percentile(values, n) for q, n in (("p50", 50), ("p90", 90), ("p99", 99))} | {
            "min": min(values),
            "max": max(values),
        }

    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit,
        "command": " ".join([".venv/bin/python", "ops/bench_live.py", *sys.argv[1:]]),
        "machine": machine(),
        "load_average": os.getloadavg(),
        "offers": book_offers,
        "bids": book_bids,
        "rate": args.rate,
        "readers": args.readers,
        "seconds": args.seconds,
        "web_workers": args.web_workers,
        "setup_s": setup_s,
        "frame_ms": spread(lat),
        "ack_ms": spread(acks),
        "frames": len(lat),
        "unanswered": result["unanswered"],
        "bids_sent": result["bids_sent"],
        "acknowledged": len(result["acknowledged"]),
        "stored": stored,
        "reads": result["reads"],
        "errors": len(result["errors"]),
        "first_errors": result["errors"][:10],
        "achieved_rate": result["bids_sent"] / result["elapsed"],
        "verify": verdict,
        "cycles": cycles,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    text = markdown(summary)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    ok = not result["errors"] and stored == len(result["acknowledged"]) and "correct" in verdict
    return 0 if ok else 1


def markdown(r: dict) -> str:
    """The result as a short report (``ops/bench`` renders its own section from the JSON)."""
    f, a = r["frame_ms"] or {}, r["ack_ms"] or {}
    c = r["cycles"]
    lines = [
        "# Live benchmark: REST bid to WebSocket frame, and mixed load",
        "",
        f"`{r['command']}` on {r['date']}, commit `{r['commit']}`, {r['machine']}.",
        "",
        f"Book: {r['offers']:,} open offers, {r['bids']:,} active bids. Load: {r['rate']:g} "
        f"bids/s and {r['readers']:g} reads/s for {r['seconds']:g} s.",
        "",
        "| measure | target (SPEC 9) | result |",
        "|---|---|---|",
        f"| bid over REST to its `best_offer` frame, p50 | 100 ms | {f.get('p50', float('nan')):.1f} ms |",
        f"| the same, p99 | 500 ms | {f.get('p99', float('nan')):.1f} ms |",
        f"| bid sent to its 201, p50 / p99 | | {a.get('p50', float('nan')):.1f} / {a.get('p99', float('nan')):.1f} ms |",
        f"| frames matched to bids | all | {r['frames']} of {r['bids_sent']} |",
        f"| bids acknowledged (201) | all | {r['acknowledged']} of {r['bids_sent']} |",
        f"| acknowledged bids stored | all | {r['stored']} |",
        f"| reads answered | all | {r['reads']} |",
        f"| errors | 0 | {r['errors']} |",
        f"| bids completed per second | {r['rate']:g} | {r['achieved_rate']:.1f} |",
        f"| matching cycles: count, mean ms, mean changes | | {c['count']}, {c['mean_ms']:.0f}, {c['mean_changes']:.1f} |",
        f"| `verify_best_offers` afterwards | clean | {r['verify']} |",
        "",
    ]
    lines += [f"* `{e}`" for e in r["first_errors"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
