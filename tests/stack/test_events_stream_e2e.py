"""``events:<pattern>`` end to end (SPEC 8.1): orders over REST through uvicorn, the matching
worker and Redis; a client follows ``events:office.>``, loses its socket mid-stream, resumes
after the last seq it saw, and the stitched seqs are exactly what ``GET /api/v1/events/``
returns for the pattern: no hole, no duplicate."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
import websockets

from exchange.services.markets import market_create
from tests.factories import PENCILS_SCHEMA, UserFactory, pencils_market
from tests.livestack import api_tokens

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

STREAM = "events:office.>"
ROUNDS = 12
# Generous: the stack shares two cores with other runs; the asserts are on state, not time.
DEADLINE = 180


def test_a_cut_and_resumed_event_stream_stitches_to_exactly_the_log(live_stack):
    pencils = pencils_market()
    market_create(subject="garden.tools.spades", title="Spades", schema=PENCILS_SCHEMA)
    for name in ("seller", "alice", "bob"):
        UserFactory(username=name)
    api = httpx.Client(base_url=live_stack.url + "/api/v1", timeout=30)
    keys = api_tokens(api, ("seller", "alice", "bob"))

    def post(path: str, who: str, body: dict) -> None:
        response = api.post(path, json=body, headers={"Authorization": f"Token {keys[who]}"})
        assert response.status_code == 201, response.text

    def trade() -> None:
        """Per round an offer on each market and a bid of alice and of bob on pencils."""
        for n in range(ROUNDS):
            for subject in (pencils.subject, "garden.tools.spades"):
                post(
                    "/offers/",
                    "seller",
                    {"market": subject, "constraint": "lot = 10 AND price >= 1.00"},
                )
            for who in ("alice", "bob"):
                post(
                    "/bids/",
                    who,
                    {"market": pencils.subject, "constraint": f"lot = 10 AND price <= 1.{n:02d}"},
                )

    def logged() -> list[dict]:
        response = api.get(
            "/events/",
            params={"subject": "office.>", "format": "jsonl"},
            headers={"Authorization": f"Token {keys['alice']}"},
        )
        assert response.status_code == 200, response.text
        return [json.loads(line) for line in response.text.splitlines() if line]

    def complete(log: list[dict]) -> bool:
        """Every order on pencils that alice may see (the offers, her bids) is in the log:
        the last cycles have run."""
        orders = [e for e in log if e["type"] in ("offer_posted", "bid_placed")]
        return len(orders) == ROUNDS * 2

    url = f"{live_stack.ws_url}?token={keys['alice']}"

    async def events_of(ws, frames: list[dict], *, until) -> None:
        """Collect the ws's event frames into ``frames`` until ``until()`` holds."""
        deadline = time.monotonic() + DEADLINE
        while not await until() and time.monotonic() < deadline:
            try:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 1))
            except TimeoutError:
                continue
            assert frame["type"] == "event", frame
            frames.append(frame)

    async def scenario():
        before: list[dict] = []
        after: list[dict] = []
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps({"action": "subscribe", "stream": STREAM}))
            assert json.loads(await ws.recv()) == {"type": "subscribed", "stream": STREAM}
            trading = asyncio.create_task(asyncio.to_thread(trade))

            async def some() -> bool:
                return len(before) >= 5

            await events_of(ws, before, until=some)
        # The socket is cut while the orders keep coming; wait until the log holds events
        # the client missed, so that the resume has something to replay.
        last_seen = before[-1]["seq"]
        missed = await asyncio.to_thread(logged)
        deadline = time.monotonic() + DEADLINE
        while missed[-1]["seq"] == last_seen and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            missed = await asyncio.to_thread(logged)
        async with websockets.connect(url) as ws:
            await ws.send(json.dumps({"action": "resume", "stream": STREAM, "after": last_seen}))
            assert json.loads(await ws.recv()) == {"type": "subscribed", "stream": STREAM}

            async def caught_up() -> bool:
                if not trading.done():
                    return False
                log = await asyncio.to_thread(logged)
                return complete(log) and bool(after) and after[-1]["seq"] == log[-1]["seq"]

            await events_of(ws, after, until=caught_up)
        await trading
        return before, after, missed[-1]["seq"]

    before, after, missed_up_to = asyncio.run(scenario())
    log = logged()
    assert complete(log)
    stitched = [f["seq"] for f in before + after]
    assert stitched == [e["seq"] for e in log]
    assert [f["data"] for f in before + after] == log
    assert {f["stream"] for f in before + after} == {STREAM}
    assert {e["subject"] for e in log} == {pencils.subject}
    assert {"bid_placed", "offer_posted", "best_offer"} <= {e["type"] for e in log}
    assert len([e for e in log if e["type"] == "bid_placed"]) == ROUNDS  # alice's, not bob's
    assert before and after
    assert after[0]["seq"] <= missed_up_to  # the resume replayed from the log, then went live
