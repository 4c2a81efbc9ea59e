"""Form 3 patterns end to end (SPEC 8.3, issue 20 item 4): patterns registered over REST
through uvicorn, then real orders (offers and bids over REST, matched by the matching
worker, delivered by the tasks worker through Redis). Each pattern's ``sub:<id>`` frames
must be exactly what ``run_offline`` gives for its query over the log as its owner reads it
(``GET /api/v1/events/?format=jsonl``) with the subscription's ``now``, and together they
must have fired (the trades' prices are chosen so that every one of the patterns does)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
import websockets

from matching.subscriptions import parse_query, parse_timestamp, run_offline
from tests.factories import StaffFactory, UserFactory, pencils_market
from tests.livestack import api_created, api_tokens, event_log

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

# Generous: the stack shares two cores with other runs; the asserts are on state, not time.
DEADLINE = 240
# Each round: one offer, a bid at this limit (which the offer's low ask lets trade at it)
# and staff closing the offer once the matching worker has found the bid.
PRICES = ["1.00", "1.10", "1.20", "1.15", "1.30", "1.25", "1.40", "1.50"]
M = "office.supplies.pencils"
T = f"FILTER{{type = 'trade' AND subject = '{M}'}}(EVENTS)"
PATTERNS = [
    # a trade above 1.05, then a later one below 1.20 (1.10 -> 1.15, ...)
    f"SELECT a.price, b.price FROM FILTER{{type = 'trade' AND subject = '{M}' AND price > 1.05}}"
    f"(EVENTS) AS a NEXT{{b.subject = a.subject AND b.price < 1.20}} {T} AS b",
    # a trade, then a later one at least 10% higher (a threshold bound by a.price)
    f"SELECT a.price, b.price FROM {T} AS a NEXT{{b.price >= 1.1 * a.price}} {T} AS b WITHIN 1h",
    # prices rising trade after trade, twice or more
    f"SELECT a.price, b.price, n FROM {T} AS a "
    f"FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} {T} AS b WHERE n >= 2",
]


def test_patterns_registered_over_rest_fire_on_real_trades_exactly_as_run_offline(live_stack):
    pencils = pencils_market()
    for name in ("seller", "alice"):
        UserFactory(username=name)
    StaffFactory(username="closer")
    api = httpx.Client(base_url=live_stack.url + "/api/v1", timeout=30)
    keys = api_tokens(api, ("seller", "alice", "closer"))

    def post(path: str, who: str, body: dict) -> dict:
        return api_created(api, keys[who], path, body)

    def logged() -> list[dict]:
        return event_log(api, keys["alice"])

    def trades() -> list[dict]:
        return [e for e in logged() if e["type"] == "trade"]

    def wait_for(what: str, holds, *args) -> None:
        deadline = time.monotonic() + DEADLINE
        while not holds(*args):
            assert time.monotonic() < deadline, what
            time.sleep(0.2)

    def matched(offer_id: object) -> bool:
        """The matching worker has found a bid for the offer (its best_offer is logged)."""
        return any(
            e["type"] == "best_offer" and str(e["offer"]) == str(offer_id)
            and e["matching_bids"] >= 1 for e in logged()
        )  # fmt: skip

    def traded(n: int) -> bool:
        return len(trades()) == n

    def trade() -> None:
        """One trade per price, each in the log before the next round's orders."""
        for n, price in enumerate(PRICES, 1):
            offer = post("/offers/", "seller", {"market": pencils.subject,
                                                "constraint": "lot = 10 AND price >= 0.50"})  # fmt: skip
            post("/bids/", "alice", {"market": pencils.subject,
                                     "constraint": f"lot = 10 AND price <= {price}"})  # fmt: skip
            wait_for(f"round {n}: a bid for the offer", matched, offer["id"])
            closed = api.post(f"/offers/{offer['id']}/close/",
                              headers={"Authorization": f"Token {keys['closer']}"})  # fmt: skip
            assert closed.status_code == 200 and closed.json()["trade"] is not None, closed.text
            wait_for(f"round {n}: the trade in the log", traded, n)

    def expected(sub: dict) -> list[dict]:
        now = parse_timestamp(sub["now"], "now")
        return list(run_offline(parse_query(sub["query"]), logged(), now=now))

    async def follow(sub: dict, trading: asyncio.Task) -> list[dict]:
        """Every frame of ``sub:<id>`` from the start, until there are as many as
        ``run_offline`` gives once trading is over (every trade is in the log by then)."""
        stream = f"sub:{sub['id']}"
        frames: list[dict] = []

        async def read(ws) -> None:
            async for message in ws:
                frames.append(json.loads(message))

        async with websockets.connect(f"{live_stack.ws_url}?token={keys['alice']}") as ws:
            await ws.send(json.dumps({"action": "resume", "stream": stream, "after": 0}))
            assert json.loads(await ws.recv()) == {"type": "subscribed", "stream": stream}
            reader = asyncio.create_task(read(ws))
            await trading
            want = await asyncio.to_thread(expected, sub)
            deadline = time.monotonic() + DEADLINE
            while len(frames) < len(want) and not reader.done():
                assert time.monotonic() < deadline, f"{stream}: {frames} of {want}"
                await asyncio.sleep(0.2)
            reader.cancel()
        assert all(f["type"] == "notification" and f["stream"] == stream for f in frames)
        return frames

    async def scenario(subs: list[dict]) -> list[list[dict]]:
        trading = asyncio.create_task(asyncio.to_thread(trade))
        followers = [asyncio.create_task(follow(sub, trading)) for sub in subs]
        await trading
        return [await f for f in followers]

    subs = [post("/subscriptions/", "alice", {"query": query}) for query in PATTERNS]
    received = asyncio.run(scenario(subs))
    assert [e["price"] for e in trades()] == PRICES
    fired = 0
    for sub, frames in zip(subs, received, strict=True):
        want = expected(sub)
        assert [{"n": f["n"], "seq": f["seq"], "data": f["data"]} for f in frames] == want
        assert [f["n"] for f in frames] == list(range(1, len(want) + 1))
        fired += bool(want)
    assert fired == len(PATTERNS)  # every pattern had something to send
    # and, read off the prices by hand, the "10% higher" pattern's pairs in order
    assert [(f["data"]["a.price"], f["data"]["b.price"]) for f in received[1]] == [
        ("1.00", "1.10"), ("1.10", "1.30"), ("1.15", "1.30"), ("1.20", "1.40"),
        ("1.25", "1.40"), ("1.30", "1.50"),
    ]  # fmt: skip
