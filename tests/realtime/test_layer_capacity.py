"""A socket that falls behind keeps its frames: the channel layer holds up to 1,000 messages
for one consumer before channels-redis drops any (its default of 100 lost frames on a
market socket a few seconds behind at 50 bids/s)."""

from __future__ import annotations

import asyncio

from channels.layers import get_channel_layer


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
