"""What one consumer pays to receive a cycle's frames from the channel layer: ``N``
messages one by one against the same ``N`` inside one message (``streams.group_send_all``
sends a group's messages that way), with and without a busy Python thread in the process,
as a server's request threads are beside its event loop.

    .venv/bin/python ops/benchmarks/layer_receive.py [--messages 40] [--repeats 5]

It uses Redis database 5 of the development Redis (``ops/services start``), under a prefix
of its own that it flushes, and prints the median milliseconds to receive all ``N``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path

from channels_redis.core import RedisChannelLayer

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from exchange.settings.ports import DEV_REDIS_URL


def _burn(stop: threading.Event) -> None:
    """Pure Python work that holds the GIL but for the interpreter's switches."""
    total = 0
    while not stop.is_set():
        for i in range(1000):
            total += i * i


async def _receive_ms(count: int, repeats: int, *, busy: bool, batched: bool) -> float:
    url = DEV_REDIS_URL.rsplit("/", 1)[0] + "/5"
    layer = RedisChannelLayer(hosts=[url], prefix=f"layer-receive-{time.time_ns()}")
    channel = await layer.new_channel()
    stop = threading.Event()
    burner = threading.Thread(target=_burn, args=(stop,), daemon=True)
    if busy:
        burner.start()
    times = []
    try:
        for _ in range(repeats):
            items = [{"type": "stream.frame", "n": n} for n in range(count)]
            if batched:
                await layer.send(channel, {"type": "stream.batch", "messages": items})
            else:
                for item in items:
                    await layer.send(channel, item)
            started = time.perf_counter()
            received = 0
            while received < count:
                message = await layer.receive(channel)
                received += len(message["messages"]) if batched else 1
            times.append((time.perf_counter() - started) * 1000)
    finally:
        stop.set()
        await layer.flush()
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"| busy thread | {args.messages} messages one by one, ms | in one message, ms |")
    print("|---|---|---|")
    for busy in (False, True):
        apart = asyncio.run(_receive_ms(args.messages, args.repeats, busy=busy, batched=False))
        together = asyncio.run(_receive_ms(args.messages, args.repeats, busy=busy, batched=True))
        print(f"| {'yes' if busy else 'no'} | {apart:.1f} | {together:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
