"""``ops/bench_live.py --aged N``: the bid path on a database that has been used (issue 36
item 1). Between two runs of the same load, a long mixed run over REST ages the book the way
a day of trading would: ``N`` bids placed, each amended once and every other one withdrawn,
and ``N`` subscriptions created and deleted, ``concurrency`` of these at a time. Its counts
and the growth of the log go beside the two runs in the report
(``report.aged_markdown``)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from decimal import Decimal
from typing import Any

import aiohttp

from ops.benchmarks.live import checks
from ops.benchmarks.live.load import SUBJECT

# The kinds of request of the mixed run, in the order the report lists them.
KINDS = (
    "bid placed",
    "bid amended",
    "bid withdrawn",
    "subscription created",
    "subscription deleted",
)
# What each kind answers when it succeeds.
EXPECTED = {
    "bid placed": 201,
    "bid amended": 200,
    "bid withdrawn": 200,
    "subscription created": 201,
    "subscription deleted": 200,
}


def plan(count: int, seed: int) -> list[tuple[str, int]]:
    """The mixed run's lifecycles in the order they start: ``count`` of ``("bid", i)``
    and of ``("subscription", i)``, shuffled."""
    steps = [("bid", i) for i in range(count)] + [("subscription", i) for i in range(count)]
    random.Random(seed).shuffle(steps)
    return steps


def bid_text(lot: int, cents: int) -> str:
    return f"lot = {lot} AND price <= {Decimal(cents) / 100:.2f}"


def subscription_query(offer: int) -> str:
    """A form 1 alert on one offer's best value: it fires on the bid load's events."""
    return f"SELECT value WHERE type = 'best_offer', subject = '{SUBJECT}', offer = {offer}"


async def mixed(
    port: int, *, offers: int, count: int, concurrency: int, seed: int, tokens: list[str]
) -> dict[str, Any]:
    """The mixed run: each kind's requests, how many answered as expected, the first
    errors, the seconds it took."""
    base = f"http://127.0.0.1:{port}/api/v1"
    rng = random.Random(seed + 2)
    sent = dict.fromkeys(KINDS, 0)
    done = dict.fromkeys(KINDS, 0)
    errors: list[str] = []
    timeout = aiohttp.ClientTimeout(total=60)
    gate = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(timeout=timeout) as client:
        async with client.get(f"{base}/offers/?state=open&limit=1") as r:
            first_offer = (await r.json())["results"][0]["id"]

        async def call(kind: str, method: str, path: str, token: str, body: Any = None) -> Any:
            sent[kind] += 1
            try:
                async with client.request(
                    method, f"{base}{path}", json=body, headers={"Authorization": f"Token {token}"}
                ) as r:
                    raw = await r.read()
            except (aiohttp.ClientError, TimeoutError) as exc:
                errors.append(f"{kind}: {exc!r}")
                return None
            if r.status != EXPECTED[kind]:
                errors.append(f"{kind}: {r.status} {raw[:100]!r}")
                return None
            done[kind] += 1
            return json.loads(raw) if raw else {}

        async def bid(i: int) -> None:
            token = tokens[i % len(tokens)]
            index = rng.randrange(offers)
            lot, cents = index * 100 + 1 + rng.randrange(50), rng.randrange(100, 160)
            body = {"market": SUBJECT, "constraint": bid_text(lot, cents)}
            placed = await call("bid placed", "POST", "/bids/", token, body)
            if placed is None:
                return
            change = {"constraint": bid_text(lot, cents + 5), "version": placed["version"]}
            path = f"/bids/{placed['id']}/"
            amended = await call("bid amended", "PATCH", path, token, change)
            if amended is not None and i % 2 == 0:
                await call("bid withdrawn", "POST", f"{path}withdraw/", token)

        async def subscription(i: int) -> None:
            token = tokens[i % len(tokens)]
            body = {"query": subscription_query(first_offer + rng.randrange(offers))}
            made = await call("subscription created", "POST", "/subscriptions/", token, body)
            if made is not None:
                path = f"/subscriptions/{made['id']}/"
                await call("subscription deleted", "DELETE", path, token)

        async def one(kind: str, i: int) -> None:
            async with gate:
                await (bid(i) if kind == "bid" else subscription(i))

        head = checks.log_head()
        started = time.perf_counter()
        await asyncio.gather(*(one(kind, i) for kind, i in plan(count, seed)))
        elapsed = time.perf_counter() - started
    return {
        "count": count,
        "concurrency": concurrency,
        "seconds": round(elapsed, 1),
        "sent": sent,
        "done": done,
        "errors": len(errors),
        "first_errors": errors[:10],
        "events": checks.log_head() - head,
    }
