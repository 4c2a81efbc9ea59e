"""One Redis connection pool per process for Django's cache (the throttles' counters live there).

Django keeps a cache object per thread, and its Redis backend gives each object a pool of its
own. Under ASGI every request runs on a fresh thread, so every request built a pool and
opened a new TCP connection to Redis just to check its throttle (py-spy on the live
benchmark: connecting was 3.7% of the web tier's busy time). ``SharedConnectionPool`` is
passed as the cache's ``pool_class``: the per-thread cache objects then share one
thread-safe redis-py pool per address and options. redis-py pools notice a fork and start
afresh in the child, so Celery's worker processes do not share sockets with their parent.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import redis


class SharedConnectionPool(redis.ConnectionPool):
    """A ``pool_class`` whose ``from_url`` hands out one pool per (address, options)."""

    _pools: ClassVar[dict[tuple[str, str], redis.ConnectionPool]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> redis.ConnectionPool:  # type: ignore[override]
        key = (url, repr(sorted(kwargs.items(), key=lambda item: item[0])))
        with cls._shared_lock:
            pool = cls._pools.get(key)
            if pool is None:
                pool = cls._pools[key] = redis.ConnectionPool.from_url(url, **kwargs)
        return pool
