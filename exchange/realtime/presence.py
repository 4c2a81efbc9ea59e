"""Who is connected where (SPEC 8.2, discovery), kept in Redis per server process.

Each server process (a uvicorn worker) owns one hash, ``<prefix>:server:<server id>``, whose
fields are facts about its connections, one field a fact:

* ``<channel>|u`` -> the user name (``""`` for an anonymous connection; only staff see it,
  through the ``presence`` action),
* ``<channel>|s|<stream>`` -> ``""``: the connection follows ``stream``,
* ``<channel>|a|<subject>`` -> the name the connection announced on ``subject`` (public).

A connection's fields go when it unsubscribes or disconnects. A process that dies without
cleaning up (SIGKILL, a lost machine) leaves its hash behind, so the hash has a TTL of
``PRESENCE_TTL_SECONDS`` that a heartbeat task in the live process renews every
``PRESENCE_HEARTBEAT_SECONDS``: a dead process's entries vanish within the TTL (30 s by
default; SPEC 8.2 asks for 60). The servers are listed in a sorted set scored by their last
beat, so that readers find the live hashes without scanning the keyspace. The process also
keeps its facts in memory: a beat that finds its hash gone (Redis restarted or evicted it,
or a stall outlived the TTL) writes them back, so live connections reappear by themselves.

Readers (``presence_facts``) take every live server's hash: the cost is one read per
connection fact, which is fine at the exchange's size; per-subject counters would be the
next step if ``who`` ever became hot.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

from django.conf import settings

from exchange.redis_clients import redis_async_client as _redis
from exchange.redis_clients import redis_client

log = logging.getLogger(__name__)

# One id per server process, unique across machines and restarts.
SERVER_ID = f"{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(4)}"

_USER, _STREAM, _ANNOUNCE = "u", "s", "a"

# This process's facts as last written (field -> value): what a beat restores.
_facts: dict[str, str] = {}
_heartbeats: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task] = (
    weakref.WeakKeyDictionary()
)


def servers_key() -> str:
    """The sorted set of live server processes, scored by their last beat."""
    return f"{settings.PRESENCE_PREFIX}:servers"


def _server_key(server: str) -> str:
    return f"{settings.PRESENCE_PREFIX}:server:{server}"


def _field(channel: str, kind: str, name: str = "") -> str:
    # Channel names have no '|'; what follows the kind is kept whole (split at most twice).
    return f"{channel}|{kind}|{name}" if name else f"{channel}|{kind}"


async def _write(set_fields: dict[str, str], drop_fields: Iterable[str] = ()) -> None:
    """Change this process's facts and renew its TTL in one round trip."""
    _ensure_heartbeat()
    key = _server_key(SERVER_ID)
    drop = list(drop_fields)
    _facts.update(set_fields)
    for name in drop:
        _facts.pop(name, None)
    async with _redis().pipeline(transaction=True) as pipe:
        if set_fields:
            pipe.hset(key, mapping=set_fields)
        if drop:
            pipe.hdel(key, *drop)
        pipe.expire(key, settings.PRESENCE_TTL_SECONDS)
        pipe.zadd(servers_key(), {SERVER_ID: time.time()})
        await pipe.execute()


def _ensure_heartbeat() -> None:
    """One heartbeat task per event loop (a server process runs one loop; tests run many).

    A heartbeat that was cancelled is not started again: its loop is shutting down
    (``asyncio.run`` cancels every task as it ends), and a connection's cleanup writing its
    last facts then would only leave a new task behind, pending when the loop closes."""
    loop = asyncio.get_running_loop()
    task = _heartbeats.get(loop)
    if task is None or (task.done() and not task.cancelled()):
        _heartbeats[loop] = loop.create_task(_heartbeat(), name="presence-heartbeat")


async def _heartbeat() -> None:
    """Beat until cancelled, also when a cancellation was swallowed on the way.

    Python 3.11's ``asyncio.wait_for`` returns the result instead of raising when the
    cancellation arrives after its awaitable finished but before it resumed; redis-py sends
    every command through it (the client has a socket timeout). A heartbeat cancelled there
    went on beating, and the loop's shutdown, which waits for every cancelled task, never
    ended (a realtime test's ``asyncio.run`` hung in ``Runner.close``). So the loop asks the
    task whether a cancellation is pending and honours it."""
    task = asyncio.current_task()
    assert task is not None
    while not task.cancelling():
        await asyncio.sleep(settings.PRESENCE_HEARTBEAT_SECONDS)
        try:
            await presence_beat()
        except Exception:  # Redis away: the next beat tries again; entries may lapse meanwhile
            log.warning("presence heartbeat failed", exc_info=True)
    raise asyncio.CancelledError


async def presence_beat() -> None:
    """Renew this process's entries (and write them back if their hash is gone); forget
    the servers that stopped beating, whose hashes have expired already."""
    key = _server_key(SERVER_ID)
    now = time.time()
    async with _redis().pipeline(transaction=True) as pipe:
        pipe.expire(key, settings.PRESENCE_TTL_SECONDS)
        pipe.zadd(servers_key(), {SERVER_ID: now})
        pipe.zremrangebyscore(servers_key(), "-inf", now - settings.PRESENCE_TTL_SECONDS)
        renewed, *_ = await pipe.execute()
    if not renewed and _facts:
        async with _redis().pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=dict(_facts))
            pipe.expire(key, settings.PRESENCE_TTL_SECONDS)
            await pipe.execute()


async def presence_connect(channel: str, user_name: str) -> None:
    await _write({_field(channel, _USER): user_name})


async def presence_join(channel: str, stream: str) -> None:
    await _write({_field(channel, _STREAM, stream): ""})


async def presence_leave(channel: str, stream: str) -> None:
    await _write({}, [_field(channel, _STREAM, stream)])


async def presence_announce(channel: str, subject: str, name: str) -> None:
    await _write({_field(channel, _ANNOUNCE, subject): name})


async def presence_disconnect(
    channel: str, streams: Iterable[str], subjects: Iterable[str]
) -> None:
    """Drop every fact of a closing connection (its streams and announcements, as it
    tracked them)."""
    drop = [_field(channel, _USER)]
    drop += [_field(channel, _STREAM, s) for s in streams]
    drop += [_field(channel, _ANNOUNCE, s) for s in subjects]
    await _write({}, drop)


@dataclass
class Connection:
    """What the live servers know of one connection."""

    user: str = ""
    streams: set[str] = field(default_factory=set)
    announced: dict[str, str] = field(default_factory=dict)


def presence_facts() -> list[Connection]:
    """Every connection of every live server process (synchronous: the API and the
    ``who`` selector read it from a thread)."""
    client = redis_client()
    alive_since = time.time() - settings.PRESENCE_TTL_SECONDS
    servers = cast(list[str], client.zrangebyscore(servers_key(), alive_since, "+inf"))
    if not servers:
        return []
    with client.pipeline(transaction=False) as pipe:
        for server in servers:
            pipe.hgetall(_server_key(server))
        hashes = cast(list[dict[str, str]], pipe.execute())
    connections: dict[str, Connection] = {}
    for server, facts in zip(servers, hashes, strict=True):
        for key, value in facts.items():
            channel, kind, name = (key.split("|", 2) + [""])[:3]
            connection = connections.setdefault(f"{server}/{channel}", Connection())
            if kind == _USER:
                connection.user = value
            elif kind == _STREAM:
                connection.streams.add(name)
            elif kind == _ANNOUNCE:
                connection.announced[name] = value
    return list(connections.values())


async def presence_watchers(stream: str) -> list[str]:
    """The user names (``anonymous`` for none) of the connections following ``stream``."""
    facts = await asyncio.to_thread(presence_facts)
    return sorted(c.user or "anonymous" for c in facts if stream in c.streams)
