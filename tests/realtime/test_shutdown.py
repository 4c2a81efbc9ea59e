"""What a loop's shutdown cancels ends: the presence heartbeat (``presence.py``) stops even
when a beat swallowed the cancellation, and no write afterwards starts another; a consumer
that swallowed it while handling a frame ends after that frame. A realtime test's
``asyncio.run`` waits, as it ends, for every task it cancelled: a heartbeat that went on
beating hung it in ``Runner.close`` until pytest-timeout (CI, on a loaded machine). The
swallowing is Python 3.11's ``asyncio.wait_for``, through which redis-py sends every command:
it returns instead of raising when the cancellation lands as the call finishes; these tests
swallow it on purpose, where it is certain to land."""

from __future__ import annotations

import asyncio
import json
from contextlib import suppress

from exchange.realtime import consumers, presence
from tests.realtime.client import connect

# Loop turns a cancelled task gets to end in (the heartbeat takes two, a consumer three): a
# count, not a time.
TURNS = 10


def test_a_cancelled_heartbeat_ends_even_when_a_beat_swallowed_the_cancellation(
    monkeypatch, settings
):
    settings.PRESENCE_HEARTBEAT_SECONDS = 0
    beats = 0

    async def beat_swallowing_cancellation():
        # What Python 3.11's asyncio.wait_for, through which redis-py sends every command,
        # does when the cancellation comes after its awaitable finished: return, not raise.
        nonlocal beats
        beats += 1
        with suppress(asyncio.CancelledError):
            await asyncio.Event().wait()

    monkeypatch.setattr(presence, "presence_beat", beat_swallowing_cancellation)

    async def start() -> asyncio.Task:
        presence._ensure_heartbeat()
        while not beats:
            await asyncio.sleep(0)
        return presence._heartbeats[asyncio.get_running_loop()]

    loop = asyncio.new_event_loop()
    try:
        heartbeat = loop.run_until_complete(start())
        heartbeat.cancel()  # as asyncio.run does on its way out, while the beat waits
        for _ in range(TURNS):
            if heartbeat.done():
                break
            loop.run_until_complete(asyncio.sleep(0))
        assert heartbeat.cancelled()
        assert beats == 1
    finally:
        loop.close()


def test_a_write_after_the_heartbeat_was_cancelled_starts_no_other():
    channel = "specific.heartbeat-test!gone"

    async def scenario():
        await presence.presence_connect(channel, "")
        heartbeat = presence._heartbeats[asyncio.get_running_loop()]
        heartbeat.cancel()
        with suppress(asyncio.CancelledError):
            await heartbeat
        # A connection's cleanup as its loop shuts down: its last write.
        await presence.presence_disconnect(channel, [], [])
        beating = [t for t in asyncio.all_tasks() if t.get_name() == "presence-heartbeat"]
        return heartbeat, beating

    heartbeat, beating = asyncio.run(scenario())
    assert heartbeat.cancelled()
    assert beating == []


def test_a_cancellation_swallowed_while_handling_a_frame_still_ends_the_consumer(monkeypatch):
    async def join_swallowing_cancellation(channel: str, stream: str) -> None:
        entered.set()
        with suppress(asyncio.CancelledError):  # as the heartbeat's beat above
            await asyncio.Event().wait()

    monkeypatch.setattr(consumers, "presence_join", join_swallowing_cancellation)

    async def scenario() -> bool:
        ws = await connect()
        await ws.send_to(text_data=json.dumps({"action": "subscribe", "stream": "system"}))
        await entered.wait()
        ws.future.cancel()  # as asyncio.run does to every task as it ends
        for _ in range(TURNS):
            if ws.future.done():
                break
            await asyncio.sleep(0)
        return ws.future.cancelled()

    entered = asyncio.Event()
    assert asyncio.run(scenario())
