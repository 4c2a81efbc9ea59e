"""The consumer bounds its work before it does it (frame depth, frame rate), answers every
failure with an error frame, and closes when its login or token is revoked."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from django.conf import settings as django_settings
from django.test import Client

import exchange.realtime.consumers as consumers
from exchange.realtime import presence
from exchange.services.tokens import token_issue, token_regenerate, token_revoke
from tests.factories import UserFactory, pencils_market
from tests.realtime.client import ask, connect

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_deeply_nested_frame_gets_an_error_and_the_connection_stays_usable():
    async def scenario():
        ws = await connect()
        deep = await ask(ws, "[" * 2000 + "]" * 2000)
        inside = await ask(ws, json.dumps({"action": "subscribe", "stream": [[[[["system"]]]]]}))
        after = await ask(ws, {"action": "subscribe", "stream": "system"})
        await ws.disconnect()
        return deep, inside, after

    deep, inside, after = asyncio.run(scenario())
    expected = {
        "type": "error",
        "code": "too_deep",
        "message": "Frames nest arrays and objects at most 4 levels deep.",
    }
    assert deep == expected and inside == expected
    assert after == {"type": "subscribed", "stream": "system"}


RATE_LIMITED = {
    "type": "error",
    "code": "rate_limited",
    "message": "At most 1 frames a second: this frame and the next ones are dropped, without "
    "another error, until the rate falls back.",
}
SUBSCRIBED = {"type": "subscribed", "stream": "system"}


def test_frames_past_the_rate_are_dropped_with_one_error_per_limiting_episode(
    settings, monkeypatch
):
    # The bucket reads its clock once when the connection opens and once per frame; these
    # are the readings, so the refills fall exactly where the test puts them.
    readings = iter([0.0] + [0.0] * 7 + [1.0] * 3 + [2.0])
    monkeypatch.setattr(consumers, "_clock", lambda: next(readings))
    settings.WS_FRAMES_PER_SECOND = 1.0
    settings.WS_FRAME_BURST = 2
    frame = json.dumps({"action": "subscribe", "stream": "system"})

    async def scenario():
        ws = await connect()
        # 2 pass (the burst), 5 are dropped, 1 passes (a second's refill), 2 are dropped,
        # 1 passes
        for _ in range(11):
            await ws.send_to(text_data=frame)
        replies = [json.loads(await ws.receive_from(timeout=5)) for _ in range(6)]
        nothing = await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()
        return replies, nothing

    replies, nothing = asyncio.run(scenario())
    assert replies == [SUBSCRIBED, SUBSCRIBED, RATE_LIMITED, SUBSCRIBED, RATE_LIMITED, SUBSCRIBED]
    assert nothing


def test_a_failure_inside_the_consumer_sends_an_error_frame_and_clears_presence(monkeypatch):
    market = pencils_market(subject="office.supplies.crash")
    stream = f"market:{market.subject}"

    async def broken(stream: str) -> list[str]:
        raise RuntimeError("boom")

    monkeypatch.setattr(consumers, "presence_watchers", broken)

    async def scenario():
        ws = await connect()
        assert await ask(ws, {"action": "subscribe", "stream": stream}) == {
            "type": "subscribed",
            "stream": stream,
        }
        watching = await asyncio.to_thread(_following, stream)
        error = await ask(ws, {"action": "presence", "stream": stream})
        closed = await ws.receive_output(timeout=5)
        left = await asyncio.to_thread(_following, stream)
        return watching, error, closed, left

    watching, error, closed, left = asyncio.run(scenario())
    assert watching == [presence.Connection(user="", streams={stream})]
    assert error == {
        "type": "error",
        "code": "server_error",
        "message": "Something went wrong on our side; reconnect.",
    }
    assert closed == {"type": "websocket.close", "code": 1011}
    assert left == []


def _following(stream: str) -> list[presence.Connection]:
    return [c for c in presence.presence_facts() if stream in c.streams]


def _revoked() -> dict:
    return {
        "type": "error",
        "code": "revoked",
        "message": "Your login or API token was revoked; this connection closes.",
    }


@pytest.mark.parametrize("revoke", [token_revoke, token_regenerate])
def test_revoking_a_token_closes_its_sockets_only(revoke):
    alice, bob = UserFactory(), UserFactory()
    alice_key, bob_key = token_issue(user=alice).key, token_issue(user=bob).key

    async def scenario():
        mine = await connect(f"/ws/?token={alice_key}")
        other = await connect(f"/ws/?token={bob_key}")
        assert (await ask(mine, {"action": "subscribe", "stream": "me"}))["type"] == "subscribed"
        await database_sync_to_async(revoke)(user=alice)
        frame = json.loads(await mine.receive_from(timeout=5))
        closed = await mine.receive_output(timeout=5)
        still = await ask(other, {"action": "subscribe", "stream": "system"})
        await other.disconnect()
        return frame, closed, still

    frame, closed, still = asyncio.run(scenario())
    assert frame == _revoked()
    assert closed == {"type": "websocket.close", "code": 4001}
    assert still == {"type": "subscribed", "stream": "system"}


def test_logging_out_closes_the_sessions_sockets():
    user = UserFactory()
    browser = Client()
    browser.force_login(user)
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={browser.cookies[django_settings.SESSION_COOKIE_NAME].value}"

    async def scenario():
        ws = await connect("/ws/", headers=[(b"cookie", cookie.encode())])
        assert (await ask(ws, {"action": "subscribe", "stream": "me"}))["type"] == "subscribed"
        response = await database_sync_to_async(browser.post)("/logout/")
        frame = json.loads(await ws.receive_from(timeout=5))
        closed = await ws.receive_output(timeout=5)
        return response.status_code, frame, closed

    status, frame, closed = asyncio.run(scenario())
    assert status == 302
    assert frame == _revoked()
    assert closed == {"type": "websocket.close", "code": 4001}
