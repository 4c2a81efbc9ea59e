"""The loop of one engine process (``manage.py subscription_engine``): batches back to back
while the log holds more, then a wait for Redis's wake-up (``ENGINE_WAKE_CHANNEL``,
published after each append and each change of a subscription) of at most ``POLL_SECONDS``:
a lost message costs at most that much delay. While a step runs, a ``LeaseKeeper`` thread
renews the process's leases (a step may last longer than a lease); after it, what it left
alive is frozen out of the garbage collector's walks (``collector.EngineHeap``). The process
runs at ``SUBSCRIPTION_ENGINE_NICE`` (``priority.py``). SIGTERM or SIGINT ends it after the
batch at hand, giving its partitions back."""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from types import FrameType
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from exchange.collector import EngineHeap
from exchange.redis_clients import redis_client
from exchange.services.subscriptions import ENGINE_WAKE_CHANNEL, WAKE_SUBSCRIPTIONS
from exchange.subscription_engine.engine import Engine
from exchange.subscription_engine.leases import LeaseKeeper
from exchange.subscription_engine.priority import run_at_nice

log = logging.getLogger(__name__)

# Seconds the loop waits for a wake-up before it looks at the log anyway.
POLL_SECONDS = 1.0
# Seconds it waits after a failed batch (the database or Redis away) before the next.
RETRY_SECONDS = 1.0


def engine_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def engine_run(*, name: str | None = None) -> None:
    run_at_nice(settings.SUBSCRIPTION_ENGINE_NICE)  # (before the lease thread: it inherits it)
    engine = Engine(name or engine_name())
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    pubsub = None
    heap = EngineHeap()  # what the step left alive, frozen (``collector.EngineHeap``)
    log.info("subscription engine %s started", engine.name)
    # renews the leases from a thread of its own while a step runs (``leases.py``)
    with LeaseKeeper(engine.renew, engine.lease_seconds / 3) as keeper:
        while not stopping:
            try:
                if pubsub is None:
                    pubsub = redis_client().pubsub(ignore_subscribe_messages=True)
                    pubsub.subscribe(ENGINE_WAKE_CHANNEL)
                with keeper.busy():
                    more = engine.step()
                heap.settle(dropped=engine.dropped, followed=len(engine.followed))
                _drain(pubsub, engine, timeout=0.0 if more else POLL_SECONDS)
            except Exception:  # the loop outlives a database or Redis away
                log.warning("subscription engine %s: batch failed", engine.name, exc_info=True)
                pubsub = None
                close_old_connections()
                time.sleep(RETRY_SECONDS)
    try:
        engine.stop()
    finally:
        log.info("subscription engine %s stopped", engine.name)


def _drain(pubsub: Any, engine: Engine, *, timeout: float) -> None:  # redis' PubSub
    """Wait up to ``timeout`` for a wake-up, then take every one waiting; a change of the
    subscriptions makes the next step read their rows."""
    message = pubsub.get_message(timeout=timeout)
    while message is not None:
        if message.get("data") == WAKE_SUBSCRIPTIONS:
            engine.changed = True
        message = pubsub.get_message(timeout=0.0)
