"""The app's Redis clients, made in one place with one set of timeouts (the channel layer and
Celery make their own from the same ``REDIS_URL``).

``redis_client()`` is one synchronous client per process (redis-py's pool is thread-safe);
``redis_async_client()`` one asyncio client per event loop, because an asyncio client's
connections belong to the loop that opened them.
"""

from __future__ import annotations

import asyncio
import functools
import weakref

import redis
import redis.asyncio as redis_async
from django.conf import settings

# Seconds: a Redis that does not answer fails a call quickly instead of hanging a request.
SOCKET_TIMEOUT = 2
CONNECT_TIMEOUT = 2

_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, redis_async.Redis] = (
    weakref.WeakKeyDictionary()
)


@functools.cache
def redis_client() -> redis.Redis:
    return redis.Redis.from_url(
        str(settings.REDIS_URL),
        decode_responses=True,
        socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=CONNECT_TIMEOUT,
    )


def redis_async_client() -> redis_async.Redis:
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        client = _async_clients[loop] = redis_async.Redis.from_url(
            str(settings.REDIS_URL),
            decode_responses=True,
            socket_timeout=SOCKET_TIMEOUT,
            socket_connect_timeout=CONNECT_TIMEOUT,
        )
    return client
