"""A socket that falls behind keeps its frames: the channel layer holds up to 1,000 messages
for one consumer before channels-redis drops any (its default of 100 lost frames on a
market socket a few seconds behind at 50 bids/s). ``group_send_all`` sends groups side by
side, each group's messages in order in one channel message, which the consumer takes apart
in order."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from channels_redis.core import RedisChannelLayer

from exchange.realtime import streams
from exchange.realtime.consumers import forget_buffer_later
from exchange.realtime.streams import (
    BATCH_TYPE,
    group_send_all,
    public_messages,
    run_sends,
    sending_layer,
)
from tests.factories import pencils_market
from tests.realtime.client import ask, connect


def test_a_consumer_that_reads_late_gets_every_group_message_in_order():
    async def scenario() -> list[int]:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        group = "capacity-test"
        await layer.group_add(group, channel)
        try:
            for n in range(600):
                await layer.group_send(group, {"type": "stream.frame", "n": n})
            # A dropped message would leave receive waiting forever: give up on it after 10 s.
            return [(await asyncio.wait_for(layer.receive(channel), 10))["n"] for _ in range(600)]
        finally:
            await layer.group_discard(group, channel)
            await layer.flush()

    assert asyncio.run(scenario()) == list(range(600))


def test_group_send_all_sends_each_group_its_messages_in_order_in_one_message():
    layer = get_channel_layer()

    async def join() -> tuple[str, str, str]:
        channels = await layer.new_channel(), await layer.new_channel(), await layer.new_channel()
        for group, channel in zip(("order-a", "order-b", "order-c"), channels, strict=True):
            await layer.group_add(group, channel)
        return channels

    first, second, third = asyncio.run(join())
    messages = [("order-c", {"type": "stream.frame", "n": -1})]
    for n in range(40):
        messages.append(("order-a", {"type": "stream.frame", "n": n}))
        messages.append(("order-b", {"type": "stream.frame", "n": 100 + n}))
    group_send_all(messages)

    async def read(channel: str) -> dict:
        return await asyncio.wait_for(layer.receive(channel), 10)

    async def each() -> tuple[dict, dict, dict, bool]:
        try:
            got = await read(first), await read(second), await read(third)
            try:  # nothing more waits for the first: one message a group
                await asyncio.wait_for(layer.receive(first), 0.5)
            except TimeoutError:
                return (*got, True)
            return (*got, False)
        finally:
            await layer.flush()

    got_a, got_b, got_c, alone = asyncio.run(each())
    assert got_a["type"] == got_b["type"] == BATCH_TYPE
    assert [m["n"] for m in got_a["messages"]] == list(range(40))
    assert [m["n"] for m in got_b["messages"]] == list(range(100, 140))
    assert got_c == {"type": "stream.frame", "n": -1}  # a group's only message goes as it is
    assert alone


def test_group_send_all_skips_the_groups_nobody_follows(monkeypatch):
    layer = get_channel_layer()
    sent: list[str] = []
    original = RedisChannelLayer.group_send

    async def recording(self: RedisChannelLayer, group: str, message: dict) -> None:
        sent.append(group)
        await original(self, group, message)

    async def join() -> list[str]:
        channels = [await layer.new_channel(), await layer.new_channel()]
        await layer.group_add("followed-a", channels[0])
        await layer.group_add("followed-b", channels[1])
        return channels

    channels = asyncio.run(join())
    monkeypatch.setattr(RedisChannelLayer, "group_send", recording)
    monkeypatch.setattr(streams, "GROUP_SIZES_KEYS", 3)  # the sizes asked three groups a time
    group_send_all(
        [("followed-b", {"type": "stream.frame", "n": 200})]
        + [(f"nobody-{i}", {"type": "stream.frame", "n": i}) for i in range(20)]
        + [("followed-a", {"type": "stream.frame", "n": 100})]
    )

    async def read() -> list[dict]:
        try:
            return [await asyncio.wait_for(layer.receive(c), 10) for c in channels]
        finally:
            await layer.flush()

    assert asyncio.run(read()) == [
        {"type": "stream.frame", "n": 100},
        {"type": "stream.frame", "n": 200},
    ]
    assert sent == ["followed-b", "followed-a"]  # in order; the 20 without a member not sent


def test_group_send_made_makes_messages_only_for_the_groups_someone_follows():
    layer = get_channel_layer()
    made: list[str] = []

    def maker(group: str, n: int):
        def make() -> list[dict]:
            made.append(group)
            return [{"type": "stream.frame", "n": n}, {"type": "stream.frame", "n": n + 1}]

        return make

    async def join() -> str:
        channel = await layer.new_channel()
        await layer.group_add("followed-made", channel)
        return channel

    channel = asyncio.run(join())
    makers = {f"nobody-made-{i}": maker(f"nobody-made-{i}", i) for i in range(20)}
    makers["followed-made"] = maker("followed-made", 100)
    streams.group_send_made(makers)

    async def read() -> dict:
        try:
            return await asyncio.wait_for(layer.receive(channel), 10)
        finally:
            await layer.flush()

    # Then only the followed group's messages were made, and they came as one batch in order
    assert made == ["followed-made"]
    assert asyncio.run(read()) == {
        "type": streams.BATCH_TYPE,
        "messages": [{"type": "stream.frame", "n": 100}, {"type": "stream.frame", "n": 101}],
    }
    # and a group alone is sent without asking (as group_send_all does)
    streams.group_send_made({"nobody-alone": maker("nobody-alone", 7)})
    assert made == ["followed-made", "nobody-alone"]


def test_group_send_all_sends_the_other_groups_when_one_fails(monkeypatch):
    sent: list[tuple[str, int]] = []

    class Layer:
        async def group_send(self, group: str, message: dict) -> None:
            if group == "broken":
                raise ConnectionError("redis went away")
            sent.append((group, message["n"]))

    monkeypatch.setattr(streams, "get_channel_layer", lambda: Layer())
    messages = [("broken", {"n": 0}), ("fine", {"n": 1}), ("also-fine", {"n": 2})]
    with pytest.raises(ConnectionError, match="redis went away"):
        streams.group_send_all(messages)
    assert sorted(sent) == [("also-fine", 2), ("fine", 1)]


def test_sends_outside_the_server_run_on_one_kept_loop_per_process():
    """Outside a request's thread (a worker process, a command) every ``run_sends`` call
    runs on the same loop, kept running in a thread of its own; a failure is raised."""
    loops = []

    async def note() -> None:
        loops.append(asyncio.get_running_loop())

    # sync code once run for a loop in this thread leaves asgiref's marks (a closed loop)
    # behind, as in a worker whose main thread once called async_to_sync
    async_to_sync(sync_to_async(lambda: None))()
    for _ in range(3):
        run_sends(note)
    assert len(loops) == 3 and loops[0] is loops[1] is loops[2]
    assert loops[0].is_running()

    async def fail() -> None:
        raise ValueError("a send failed")

    with pytest.raises(ValueError, match="a send failed"):
        run_sends(fail)
    run_sends(note)  # the loop outlives a failure
    assert loops[-1] is loops[0]


def test_sends_from_a_request_thread_run_on_the_servers_loop():
    """In sync code run for an event loop by asgiref (a request under uvicorn), the sends run
    on that loop, as ``async_to_sync`` would run them."""
    seen = []

    async def note() -> None:
        seen.append(asyncio.get_running_loop())

    async def server() -> asyncio.AbstractEventLoop:
        await sync_to_async(run_sends, thread_sensitive=False)(note)
        return asyncio.get_running_loop()

    loop = asyncio.run(server())
    assert seen == [loop]


def test_the_shared_layer_can_be_flushed_after_sends_on_the_kept_loop():
    """The kept loop sends through a private copy of the Redis layer, so closing the shared
    layer's connections on another loop never reaches the kept loop's (asyncio would refuse:
    a future attached to a different loop)."""
    group_send_all([("flush-test", {"type": "stream.frame", "n": 1})])
    used = []

    async def note() -> None:
        used.append(sending_layer())

    run_sends(note)
    shared = get_channel_layer()
    assert used[0] is not shared and type(used[0]) is type(shared)
    asyncio.run(shared.flush())  # raised RuntimeError when the kept loop used the shared layer
    group_send_all([("flush-test", {"type": "stream.frame", "n": 2})])


def test_a_changed_channel_layer_setting_gives_the_kept_loop_a_new_copy(settings):
    used = []

    async def note() -> None:
        used.append(sending_layer())

    run_sends(note)
    config = settings.CHANNEL_LAYERS["default"]
    settings.CHANNEL_LAYERS = {
        "default": {**config, "CONFIG": {**config["CONFIG"], "prefix": "changed-layer-test"}}
    }
    run_sends(note)
    assert used[1] is not used[0]
    assert used[1].prefix == "changed-layer-test"


@pytest.mark.django_db(transaction=True)
def test_a_socket_gets_each_frame_of_a_batch_in_order_with_other_groups_beside_it():
    pencils, spades = "market:office.supplies.pencils", "market:garden.tools.spades"
    pencils_market()
    pencils_market(subject="garden.tools.spades")

    def frames(stream: str, seqs: range) -> list[tuple[str, dict]]:
        return [
            message
            for n in seqs
            for message in public_messages(stream=stream, type="best_offer", seq=n, data={"n": n})
        ]

    async def scenario() -> list[dict]:
        ws = await connect()
        for stream in (pencils, spades):
            answer = await ask(ws, {"action": "subscribe", "stream": stream})
            assert answer == {"type": "subscribed", "stream": stream}
        await asyncio.to_thread(
            group_send_all, frames(pencils, range(1, 31)) + frames(spades, range(31, 33))
        )
        got = [json.loads(await ws.receive_from(timeout=5)) for _ in range(32)]
        assert await ws.receive_nothing(timeout=0.3)
        await ws.disconnect()
        return got

    got = asyncio.run(scenario())
    assert [f["seq"] for f in got if f["stream"] == pencils] == list(range(1, 31))
    assert [f["seq"] for f in got if f["stream"] == spades] == [31, 32]
    assert all(f["type"] == "best_offer" and f["data"] == {"n": f["seq"]} for f in got)


def test_a_message_for_a_consumer_that_left_is_dropped_from_the_layers_buffer(monkeypatch):
    async def scenario() -> tuple[dict, bool, bool, bool]:
        layer = get_channel_layer()
        live, gone = await layer.new_channel(), await layer.new_channel()
        await layer.send(gone, {"type": "stream.frame", "n": 1})  # sent as its consumer left
        await layer.send(live, {"type": "stream.frame", "n": 2})
        # Reading the process's channels files the first message under its channel.
        got = await asyncio.wait_for(layer.receive(live), 10)
        filed = gone in layer.receive_buffer
        monkeypatch.setattr(layer, "expiry", 0)  # so the buffer goes a second from now
        forget_buffer_later(layer, gone)
        kept_meanwhile = gone in layer.receive_buffer
        await asyncio.sleep(1.5)
        return got, filed, kept_meanwhile, gone in layer.receive_buffer

    got, filed, kept_meanwhile, left = asyncio.run(scenario())
    assert got == {"type": "stream.frame", "n": 2}
    assert filed and kept_meanwhile  # a consumer still there would take it within the expiry
    assert not left
