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
from exchange.realtime import limits, presence
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
    "message": "At most 1 frames a second: frames past it are dropped, with this error at most "
    "once in 1 s; dropping frames in 3 such windows in a row closes the connection (4029).",
}
FLOODED = {
    "type": "error",
    "code": "flooded",
    "message": "Frames came past 1 a second in 3 windows of 1 s in a row; this connection "
    "closes (4029).",
}
SUBSCRIBED = {"type": "subscribed", "stream": "system"}
FRAME = json.dumps({"action": "subscribe", "stream": "system"})


@pytest.fixture
def frame_clock(settings, monkeypatch):
    """Sets the rate (``per_second``, burst 2 unless given, 3 windows to a close) and the
    bucket's clock readings: one when the connection opens, then one per frame."""

    def set_clock(readings: list[float], *, per_second: float = 1.0, burst: int = 2) -> None:
        it = iter(readings)
        monkeypatch.setattr(limits, "_clock", lambda: next(it))
        settings.WS_FRAMES_PER_SECOND = per_second
        settings.WS_FRAME_BURST = burst
        settings.WS_FLOOD_WINDOWS = 3

    return set_clock


def _flood(frames: int, replies: int) -> tuple[list[dict], dict | None]:
    """Send ``frames`` frames, read ``replies`` replies, then what comes next within 0.3 s
    (a close, or None)."""

    async def scenario():
        ws = await connect()
        for _ in range(frames):
            await ws.send_to(text_data=FRAME)
        got = [json.loads(await ws.receive_from(timeout=5)) for _ in range(replies)]
        quiet = await ws.receive_nothing(timeout=0.3)
        after = None if quiet else await ws.receive_output(timeout=5)
        await ws.disconnect()
        return got, after

    return asyncio.run(scenario())


def test_frames_past_the_rate_are_dropped_with_one_error_per_window(frame_clock):
    # 2 pass (the burst), 5 are dropped, 1 passes (a second's refill), 2 are dropped (a new
    # window: one error), 1 passes
    frame_clock([0.0] + [0.0] * 7 + [1.0] * 3 + [2.0])

    replies, after = _flood(11, 6)

    assert replies == [SUBSCRIBED, SUBSCRIBED, RATE_LIMITED, SUBSCRIBED, RATE_LIMITED, SUBSCRIBED]
    assert after is None


def test_frames_slipping_through_a_window_do_not_bring_another_error(frame_clock):
    # At 10 a second, burst 1: a frame passes every 0.1 s between drops. One error for the
    # window that opened at 0.0, the next at 1.0 (before: one per drop after a pass).
    frame_clock([0.0, 0.0, 0.0, 0.1, 0.1, 0.2, 0.2, 1.0, 1.0], per_second=10.0, burst=1)

    replies, after = _flood(8, 6)

    limited = {
        **RATE_LIMITED,
        "message": RATE_LIMITED["message"].replace("At most 1 ", "At most 10 "),
    }
    assert replies == [SUBSCRIBED, limited, SUBSCRIBED, SUBSCRIBED, SUBSCRIBED, limited]
    assert after is None


def test_sustained_overflow_closes_the_connection_with_4029(frame_clock):
    # Drops in three windows in a row (opened at 0, 1 and 2 s): two errors, then the close
    frame_clock([0.0] + [0.0] * 3 + [1.0] * 2 + [2.0] * 2)

    replies, after = _flood(7, 7)

    assert replies == [
        *(SUBSCRIBED, SUBSCRIBED, RATE_LIMITED),
        *(SUBSCRIBED, RATE_LIMITED),
        *(SUBSCRIBED, FLOODED),
    ]
    assert after == {"type": "websocket.close", "code": 4029}


def test_a_quiet_window_between_overflows_starts_the_count_again(frame_clock):
    # Windows opened at 0 and 1 s, none at 2 (quiet), then at 3.5 and 4.5: no close
    frame_clock([0.0] + [0.0] * 3 + [1.0] * 2 + [3.5] * 3 + [4.5] * 2)

    replies, after = _flood(10, 10)

    assert replies == [
        *(SUBSCRIBED, SUBSCRIBED, RATE_LIMITED),
        *(SUBSCRIBED, RATE_LIMITED),
        *(SUBSCRIBED, SUBSCRIBED, RATE_LIMITED),
        *(SUBSCRIBED, RATE_LIMITED),
    ]
    assert after is None


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
