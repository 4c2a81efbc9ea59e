"""End to end through uvicorn, the Celery worker and Redis: REST in, WebSocket frames out."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from exchange.models import BestOffer
from exchange.services.orders import offer_publish
from tests.factories import UserFactory, pencils_market
from tests.stack.test_matching_worker import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


async def next_frame(ws, *, stream: str, type: str, timeout: float = 30.0) -> dict:
    """The next frame of a stream and type (skipping others, e.g. market-wide events)."""

    async def wait():
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("stream") == stream and frame.get("type") == type:
                return frame

    return await asyncio.wait_for(wait(), timeout)


def test_bid_over_rest_reaches_websockets_and_resume_misses_nothing(live_stack):
    market = pencils_market()
    for name in ("seller", "alice", "bob"):
        UserFactory(username=name)
    offer = offer_publish(
        seller=UserFactory(username="seller"),
        market=market,
        constraint="lot BETWEEN 1 AND 100 AND price >= 1.00",
    )
    api = httpx.Client(base_url=live_stack.url + "/api/v1", timeout=30)
    tokens = {
        name: api.post(
            "/auth/token/", json={"username": name, "password": "pw-for-tests-1"}
        ).json()["token"]
        for name in ("alice", "bob")
    }

    def post_bid(who: str, constraint: str) -> dict:
        response = api.post(
            "/bids/",
            json={"market": market.subject, "constraint": constraint},
            headers={"Authorization": f"Token {tokens[who]}"},
        )
        assert response.status_code == 201, response.text
        return response.json()

    def amend(who: str, bid: dict, constraint: str) -> dict:
        response = api.patch(
            f"/bids/{bid['id']}/",
            json={"constraint": constraint, "version": bid["version"]},
            headers={"Authorization": f"Token {tokens[who]}"},
        )
        assert response.status_code == 200, response.text
        return response.json()

    async def scenario():
        stream = f"market:{market.subject}"
        async with (
            websockets.connect(live_stack.ws_url) as watcher,
            websockets.connect(f"{live_stack.ws_url}?token={tokens['alice']}") as alice_ws,
        ):
            await watcher.send(json.dumps({"action": "subscribe", "stream": stream}))
            await alice_ws.send(json.dumps({"action": "subscribe", "stream": "me"}))
            assert json.loads(await watcher.recv())["type"] == "subscribed"
            assert json.loads(await alice_ws.recv())["type"] == "subscribed"

            alice_bid = await asyncio.to_thread(post_bid, "alice", "lot = 10 AND price <= 1.20")
            seen = await next_frame(watcher, stream=stream, type="best_offer")
            assert (seen["data"]["offer"], seen["data"]["best_value"]) == (offer.pk, "1.20")
            mine = await next_frame(alice_ws, stream="me", type="notification")
            assert mine["data"]["type"] == "best_bid"

            bob_bid = await asyncio.to_thread(post_bid, "bob", "lot = 20 AND price <= 1.30")
            outbid = await next_frame(alice_ws, stream="me", type="notification")
            assert (outbid["data"]["type"], outbid["data"]["best_value"]) == ("outbid", "1.30")
            last_seq = outbid["seq"]
        return alice_bid, bob_bid, last_seq

    alice_bid, bob_bid, last_seq = asyncio.run(scenario())

    # While alice is away she takes the top place back and loses it again. Bob's amend waits
    # for the cycle of hers: one cycle over both changes would see only where they end (bob
    # on top, alice still outbid) and tell her nothing (it happened once in a whole run).
    alice_bid = amend("alice", alice_bid, "lot = 10 AND price <= 1.40")
    wait_for(
        lambda: BestOffer.objects.filter(offer=offer, bid_id=alice_bid["id"]).exists(),
        "alice's amend to take the top place",
    )
    amend("bob", bob_bid, "lot = 20 AND price <= 1.50")

    async def resume():
        async with websockets.connect(f"{live_stack.ws_url}?token={tokens['alice']}") as ws:
            await ws.send(json.dumps({"action": "resume", "stream": "me", "after": last_seq}))
            assert json.loads(await ws.recv()) == {"type": "subscribed", "stream": "me"}
            missed = [await next_frame(ws, stream="me", type="notification") for _ in range(2)]
            with pytest.raises(asyncio.TimeoutError):
                await next_frame(ws, stream="me", type="notification", timeout=1.5)
        return missed

    missed = asyncio.run(resume())
    assert [(m["data"]["type"], m["data"]["best_value"]) for m in missed] == [
        ("best_bid", "1.40"),
        ("outbid", "1.50"),
    ]
    assert missed[0]["seq"] > last_seq and missed[1]["seq"] > missed[0]["seq"]
