"""One Redis connection pool, and one client object, per process for Django's cache (the
throttles' counters live there).

Django keeps a cache object per thread (per request context under ASGI), and its Redis
backend gives each object a pool of its own. Under ASGI every request runs in a fresh
context, so every request built a pool and opened a new TCP connection to Redis just to
check its throttle (py-spy on the live benchmark: connecting was 3.7% of the web tier's busy
time). ``SharedConnectionPool`` is passed as the cache's ``pool_class``: the per-context cache
objects then share one thread-safe redis-py pool per address and options.

Django's backend also builds a new ``redis.Redis`` for every operation, and a client's
constructor fills a table of some 300 response callbacks: two clients per throttled request,
about 7% of ``POST /api/v1/bids/``'s CPU (cProfile, issue 17). ``RedisCache`` keeps one client
per pool instead; a redis-py client holds no state of its own between commands (it takes a
connection from the pool for each), so one serves every thread. redis-py pools notice a fork
and start afresh in the child, so Celery's worker processes do not share sockets with their
parent.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import redis
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class SharedConnectionPool(redis.ConnectionPool):
    """A ``pool_class`` whose ``from_url`` hands out one pool per (address, options)."""

    _pools: ClassVar[dict[tuple[str, str], redis.ConnectionPool]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> redis.ConnectionPool:  # type: ignore[override]  # a shared base-class pool, not Self
        key = (url, repr(sorted(kwargs.items(), key=lambda item: item[0])))
        with cls._shared_lock:
            pool = cls._pools.get(key)
            if pool is None:
                pool = cls._pools[key] = redis.ConnectionPool.from_url(url, **kwargs)
        return pool


_clients: dict[int, redis.Redis] = {}
_clients_lock = threading.Lock()


class SharedClientCacheClient(RedisCacheClient):
    """Django's cache client, handing out one ``redis.Redis`` per connection pool."""

    def get_client(self, key: Any = None, *, write: bool = False) -> redis.Redis:
        # Django's own names for its pool and client class, which the stubs leave out.
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = _clients.get(id(pool))
        if client is None or client.connection_pool is not pool:
            with _clients_lock:
                client = _clients[id(pool)] = self._client(connection_pool=pool)  # type: ignore[attr-defined]  # as above
        return client


_scripts: dict[tuple[int, str], Any] = {}


class RedisCache(DjangoRedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with ``SharedClientCacheClient``, and
    its Redis client and scripts for what needs more than get and set (the throttles'
    windows, exchange/throttling.py). Keys given to ``redis()`` must go through
    ``make_key`` to stay in the cache's namespace."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClientCacheClient

    def redis(self) -> Any:
        """This cache's client for writing (this process's one client for its pool)."""
        # Django's client object, which the stubs leave out.
        return self._cache.get_client(write=True)  # type: ignore[attr-defined]

    def script(self, text: str) -> Any:
        """``text`` as a redis-py ``Script`` on this cache's client (EVALSHA, loaded again
        by redis-py if Redis restarted), made once per client and text."""
        client = self.redis()
        key = (id(client), text)
        script = _scripts.get(key)
        if script is None:
            script = _scripts[key] = client.register_script(text)
        return script
