"""The load: ``rate`` bids per second over REST, each built to become the best bid of a
chosen offer, and ``readers`` reads per second beside them, for ``seconds``; the latency of a
bid runs from just before its POST to the ``best_offer`` frame announcing its value on a
WebSocket subscribed to the market.

It relies on the layout of ``manage.py bench_book``'s book: the market ``SUBJECT``, the
buyers ``buyer0`` to ``buyer49``, offers with consecutive ids whose offer ``i`` sells lots
``100 i + 1`` to ``100 i + 50``.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from decimal import Decimal
from typing import Any

import aiohttp
import websockets
from websockets.asyncio.client import ClientConnection

SUBJECT = "office.supplies.pencils"
BUYERS = 50


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


async def drive(
    port: int,
    offers: int,
    rate: float,
    seconds: float,
    readers: float,
    seed: int,
    floor: int,
    tokens: list[str],
) -> dict[str, Any]:
    """Run the load; ``floor`` is the best value in the book, in cents, which every bid beats;
    ``tokens`` are the API tokens of the buyers ``buyer0`` to ``buyer{BUYERS - 1}``."""
    base = f"http://127.0.0.1:{port}/api/v1"
    rng = random.Random(seed + 1)
    timeout = aiohttp.ClientTimeout(total=30)
    async with (
        aiohttp.ClientSession(timeout=timeout) as anon,
        anon.get(f"{base}/offers/?state=open&limit=1") as r,
    ):
        first_offer = (await r.json())["results"][0]["id"]
    sent: dict[tuple[int, str], float] = {}
    # Per bid, for the stage breakdown (checks.stages): Unix times of its POST, its 201 and
    # its frame, keyed like ``sent``; the bid's id once the 201 names it.
    clock = time.time() - time.perf_counter()
    timeline: dict[tuple[int, str], dict[str, float | int]] = {}
    latencies: list[float] = []
    acknowledged: list[int] = []
    acks: list[float] = []  # milliseconds from sending a bid to its 201
    errors: list[str] = []
    reads = 0
    prices: dict[int, int] = {}

    async def listen(ws: ClientConnection) -> None:
        async for raw in ws:
            frame = json.loads(raw)
            if frame.get("type") != "best_offer":
                continue
            key = (frame["data"]["offer"], frame["data"]["best_value"])
            started = sent.pop(key, None)
            if started is not None:
                arrived = time.perf_counter()
                latencies.append((arrived - started) * 1000)
                timeline[key]["frame"] = clock + arrived

    async def bid(client: aiohttp.ClientSession, token: str, offer_index: int) -> None:
        offer_id = first_offer + offer_index
        cents = prices.get(offer_id, floor) + 1
        prices[offer_id] = cents
        value = f"{Decimal(cents) / 100:.2f}"
        lot = offer_index * 100 + 1 + rng.randrange(0, 50)
        posted = sent[(offer_id, value)] = time.perf_counter()
        times = timeline[(offer_id, value)] = {"post": clock + posted}
        try:
            async with client.post(
                f"{base}/bids/",
                json={"market": SUBJECT, "constraint": f"lot = {lot} AND price <= {value}"},
                headers={"Authorization": f"Token {token}"},
            ) as r:
                body = await r.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            errors.append(f"bid: {exc!r}")
            return
        if r.status == 201:
            answered = time.perf_counter()
            times["id"] = json.loads(body)["id"]
            times["ack"] = clock + answered
            acknowledged.append(int(times["id"]))
            acks.append((answered - posted) * 1000)
        else:
            errors.append(f"bid: {r.status} {body[:100]!r}")

    async def read(client: aiohttp.ClientSession) -> None:
        nonlocal reads
        path = rng.choice(
            [
                "/best-offers/?limit=50",
                f"/offers/{first_offer + rng.randrange(offers)}/",
                "/markets/",
            ]
        )
        try:
            async with client.get(f"{base}{path}") as r:
                await r.read()
                if r.status != 200:
                    errors.append(f"read {path}: {r.status}")
            reads += 1
        except (aiohttp.ClientError, TimeoutError) as exc:
            errors.append(f"read: {exc!r}")

    async with websockets.connect(f"ws://127.0.0.1:{port}/ws/", max_queue=None) as ws:
        await ws.send(json.dumps({"action": "subscribe", "stream": f"market:{SUBJECT}"}))
        await ws.recv()
        listener = asyncio.create_task(listen(ws))
        # aiohttp rather than httpx: httpx's pool re-scans every waiting request against every
        # connection on each event, so once a few hundred requests wait the driver itself
        # saturates a core (py-spy: 22% in httpcore's _assign_requests_to_connections, 100%
        # busy at 70 requests/s) and the benchmark measures its own queue.
        connector = aiohttp.TCPConnector(limit=200)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as client:
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
                        asyncio.create_task(
                            bid(client, tokens[i % len(tokens)], rng.randrange(offers))
                        )
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
        # Acknowledged bids whose frame never came: the bench asks the database whether each
        # was ever announced (``checks.announced``).
        "unseen_ids": [int(t["id"]) for t in timeline.values() if "id" in t and "frame" not in t],
        "bids_sent": n_bids,
        "timeline": [t for t in timeline.values() if "id" in t and "frame" in t],
    }


def spread(values: list[float]) -> dict[str, float] | None:
    """p50, p90, p99, min and max of ``values``; None when there are none."""
    if not values:
        return None
    return {q: percentile(values, n) for q, n in (("p50", 50), ("p90", 90), ("p99", 99))} | {
        "min": min(values),
        "max": max(values),
    }
