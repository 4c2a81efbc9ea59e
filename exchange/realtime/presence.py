"""Who watches a stream (the Information Bus's discovery), kept in Redis.

Each subscription is a field of a hash per stream, ``channel name -> user name``; it is
removed on unsubscribe and disconnect. A key left by a crashed server expires after a day.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import cast

from django.conf import settings

from exchange.redis_clients import redis_async_client as _redis

TTL_SECONDS = 24 * 3600


def _key(stream: str) -> str:
    return f"{settings.PRESENCE_PREFIX}:{stream}"


async def presence_join(stream: str, channel: str, name: str) -> None:
    key = _key(stream)
    async with _redis().pipeline(transaction=True) as pipe:
        pipe.hset(key, channel, name)
        pipe.expire(key, TTL_SECONDS)
        await pipe.execute()


async def presence_leave(stream: str, channel: str) -> None:
    # redis-py types its commands for both clients (a value or an awaitable); this one awaits.
    await cast(Awaitable[int], _redis().hdel(_key(stream), channel))


async def presence_watchers(stream: str) -> list[str]:
    watchers = await cast(Awaitable[dict[str, str]], _redis().hgetall(_key(stream)))
    return sorted(watchers.values())
