"""Consumer processes on the channel layer (channels-redis), and a producer driving them.

Each consumer is a separate process that reads its own channel, ``<run>.consumer.<n>``,
hands every message to a ``matching.dissemination.Consumer`` and sends what that notified
to the run's ``<run>.out`` channel, one reply per message (empty when nothing changed, so
that the producer can time the last subscriber's update). A ``stop`` message ends it after
a ``done`` reply. Channels keep order per channel, so each watch's notifications arrive in
order: a watch lives in one consumer.

The processes build their channel layer from ``hosts`` and ``prefix`` directly, not from
Django's settings, so that a process is cheap to start; the producer passes the test or
deployment's own.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from channels_redis.core import RedisChannelLayer

from matching.dissemination import Consumer, Producer
from matching.dissemination.strategies import size
from matching.subscriptions.events import Event

CAPACITY = 1_000_000  # messages a channel may hold: the producer may run far ahead
EXPIRY = 600


def channel_layer(hosts: list[str], prefix: str) -> RedisChannelLayer:
    return RedisChannelLayer(hosts=hosts, prefix=prefix, capacity=CAPACITY, expiry=EXPIRY)


def inbox(run: str, number: int) -> str:
    return f"{run}.consumer.{number}"


def consumer_main(number: int, hosts: list[str], prefix: str, run: str) -> None:
    """A consumer process's entry point."""
    asyncio.run(_serve(number, channel_layer(hosts, prefix), run))


async def _serve(number: int, layer: RedisChannelLayer, run: str) -> None:
    consumer = Consumer()
    out = f"{run}.out"
    busy = 0.0
    while True:
        message = await layer.receive(inbox(run, number))
        if message["type"] == "stop":
            await layer.send(out, {"type": "done", "consumer": number, "busy": busy})
            break
        started = time.perf_counter()
        notified = consumer.handle(message["body"])
        busy += time.perf_counter() - started
        await layer.send(
            out,
            {
                "type": "notified",
                "consumer": number,
                "at": time.time(),
                "items": [[n.watch, n.seq, n.data] for n in notified],
                "work": dict(consumer.work),
            },
        )


class Cluster:
    """``consumers`` processes and the producer's side of their channels, all under
    ``<prefix>:<run>`` (which ``stop`` clears, so ``run`` must be unique)."""

    def __init__(self, consumers: int, hosts: list[str], prefix: str, run: str) -> None:
        self.consumers, self.hosts, self.run = consumers, hosts, run
        self.prefix = prefix = f"{prefix}:{run}"
        self.layer = channel_layer(hosts, prefix)
        self.processes: list[multiprocessing.process.BaseProcess] = []

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")
        for n in range(self.consumers):
            p = context.Process(
                target=consumer_main, args=(n, self.hosts, self.prefix, self.run), daemon=True
            )
            p.start()
            self.processes.append(p)

    async def send(self, messages: Iterable[tuple[int, dict[str, Any]]]) -> tuple[int, int]:
        """Sends ``(consumer, message)`` pairs; how many and their bytes."""
        count = nbytes = 0
        for consumer, message in messages:
            await self.layer.send(inbox(self.run, consumer), {"type": "m", "body": message})
            count += 1
            nbytes += size(message)
        return count, nbytes

    async def stop(self) -> list[dict[str, Any]]:
        """Stops every consumer; their replies in arrival order, ``done`` ones last."""
        for n in range(self.consumers):
            await self.layer.send(inbox(self.run, n), {"type": "stop"})
        replies, done = [], 0
        while done < self.consumers:
            reply = await self.layer.receive(f"{self.run}.out")
            replies.append(reply)
            done += reply["type"] == "done"
        for p in self.processes:
            p.join(timeout=60)
        await self.layer.flush()
        return replies


async def run_flow(
    cluster: Cluster,
    producer: Producer,
    history: list[Event],
    watches: list[tuple[Any, str, int]],
    events: list[Event],
) -> dict[Any, list[tuple[int | None, dict[str, Any]]]]:
    """Runs ``history``, registers ``watches`` (id, query, consumer), runs ``events`` and
    stops the cluster; every watch's notifications as ``(seq, data)`` lists."""
    for e in history:
        await cluster.send(producer.change(e))
    for watch, text, consumer in watches:
        await cluster.send([(consumer, producer.register(watch, text, consumer))])
    for e in events:
        await cluster.send(producer.change(e))
    got: dict[Any, list[tuple[int | None, dict[str, Any]]]] = defaultdict(list)
    for reply in await cluster.stop():
        for watch, seq, data in reply.get("items", ()):
            got[watch].append((seq, data))
    return dict(got)
