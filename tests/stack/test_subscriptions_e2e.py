"""Live subscriptions end to end (SPEC 8.3, issue 19 item 4): orders over REST through
uvicorn, the matching worker, the tasks worker and Redis. While orders keep coming,
subscriptions with start times in the past register over REST; a client follows each
``sub:<id>`` stream, loses its socket mid-stream and resumes after the last ``n`` it saw.
Each stitched sequence must be exactly what ``run_offline`` gives over the log as the owner
reads it (``GET /api/v1/events/?format=jsonl``) with the subscription's ``now``: the seam
between history and live events has no gap and no duplicate."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time

import httpx
import pytest
import websockets

from matching.subscriptions import parse_query, parse_timestamp, run_offline
from tests.factories import UserFactory, pencils_market
from tests.livestack import api_tokens

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

ROUNDS = 10
# Generous: the stack shares two cores with other runs; the asserts are on state, not time.
DEADLINE = 240
QUERIES = [
    "SELECT * WHERE start_time = NOW - {s}s",
    "SELECT bid, limit WHERE type = 'bid_placed', start_time = NOW - {s}s",
    "SELECT COUNT(offer, 3) WHERE type = 'offer_posted', start_time = NOW - {s}s",
]


def test_subscriptions_registered_while_trading_stitch_to_exactly_run_offline(live_stack):
    rng = random.Random(19)
    pencils = pencils_market()
    for name in ("seller", "alice", "bob"):
        UserFactory(username=name)
    api = httpx.Client(base_url=live_stack.url + "/api/v1", timeout=30)
    keys = api_tokens(api, ("seller", "alice", "bob"))
    alice = {"Authorization": f"Token {keys['alice']}"}

    def post(path: str, who: str, body: dict) -> dict:
        response = api.post(path, json=body, headers={"Authorization": f"Token {keys[who]}"})
        assert response.status_code == 201, response.text
        return response.json()

    # Trading pauses halfway until the first subscription is registered, so that its NOW
    # falls between logged events however fast the machine trades (the seam is crossed).
    registered = threading.Event()

    def trade() -> None:
        for n in range(ROUNDS):
            if n == ROUNDS // 2:
                registered.wait(DEADLINE)
            post(
                "/offers/",
                "seller",
                {"market": pencils.subject, "constraint": "lot = 10 AND price >= 1.00"},
            )
            for who in ("alice", "bob"):
                post(
                    "/bids/",
                    who,
                    {"market": pencils.subject, "constraint": f"lot = 10 AND price <= 1.{n:02d}"},
                )

    def logged() -> list[dict]:
        response = api.get("/events/", params={"format": "jsonl"}, headers=alice)
        assert response.status_code == 200, response.text
        return [json.loads(line) for line in response.text.splitlines() if line]

    def expected(sub: dict, log: list[dict] | None = None) -> list[dict]:
        now = parse_timestamp(sub["now"], "now")
        return list(
            run_offline(parse_query(sub["query"]), logged() if log is None else log, now=now)
        )

    def settled(sub: dict) -> tuple[bool, list[dict]]:
        """What ``sub`` should have sent, and whether the log is complete: every bid of
        alice's is in it (the cycle that logs the last one may run after trading returned)."""
        log = logged()
        done = len([e for e in log if e["type"] == "bid_placed"]) == ROUNDS
        return done, expected(sub, log)

    async def follow(sub: dict, trading: asyncio.Task) -> list[dict]:
        """Frames of ``sub:<id>``: a first socket cut after a few frames, then a resume."""
        url = f"{live_stack.ws_url}?token={keys['alice']}"
        stream = f"sub:{sub['id']}"
        frames: list[dict] = []
        cut_after = rng.randint(1, 4)
        deadline = time.monotonic() + DEADLINE
        for attempt in ("first", "resumed"):
            after = frames[-1]["n"] if frames else 0
            async with websockets.connect(url) as ws:
                await ws.send(json.dumps({"action": "resume", "stream": stream, "after": after}))
                assert json.loads(await ws.recv()) == {"type": "subscribed", "stream": stream}
                checked = 0.0
                while time.monotonic() < deadline:
                    if attempt == "first" and len(frames) >= cut_after:
                        break
                    if attempt == "resumed" and trading.done() and time.monotonic() > checked + 1:
                        checked = time.monotonic()
                        done, want = await asyncio.to_thread(settled, sub)
                        if done and len(frames) >= len(want):
                            break
                    try:
                        frame = json.loads(await asyncio.wait_for(ws.recv(), 1))
                    except TimeoutError:
                        continue
                    assert frame["type"] == "notification" and frame["stream"] == stream, frame
                    frames.append(frame)
        return frames

    async def scenario():
        trading = asyncio.create_task(asyncio.to_thread(trade))
        subs, followers = [], []
        try:
            for template in QUERIES:
                # registered at a random moment while orders come, starting in the past
                await asyncio.sleep(rng.uniform(0.2, 1.5))
                query = template.format(s=rng.randint(1, 30))
                response = await asyncio.to_thread(
                    api.post, "/subscriptions/", json={"query": query}, headers=alice
                )
                assert response.status_code == 201, response.text
                subs.append(response.json())
                registered.set()
                followers.append(asyncio.create_task(follow(subs[-1], trading)))
        finally:
            registered.set()  # a failed registration must not leave trading waiting
        await trading
        return subs, [await f for f in followers]

    subs, received = asyncio.run(scenario())
    log = logged()
    assert len([e for e in log if e["type"] == "bid_placed"]) == ROUNDS  # alice's, not bob's
    for sub, frames in zip(subs, received, strict=True):
        want = expected(sub)
        assert [{"n": f["n"], "seq": f["seq"], "data": f["data"]} for f in frames] == want
        assert [f["n"] for f in frames] == list(range(1, len(want) + 1))
    # The seam was crossed: some subscription had events both before and after its NOW
    times = [parse_timestamp(e["time"], "time") for e in log]
    nows = [parse_timestamp(sub["now"], "now") for sub in subs]
    assert any(times[0] < now <= times[-1] for now in nows)
