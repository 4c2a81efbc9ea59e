"""What one WebSocket client may cost: the rate of a connection's frames and the answer to a
flood; how many connections one user keeps open and how many streams they follow.

A flood is answered by the server, never echoed: frames past the rate are dropped before
they are parsed, the client hears ``rate_limited`` at most once per ``RATE_WINDOW`` (not
once per dropped frame, nor once each time a frame slips through between drops), and a
client still dropping frames in ``WS_FLOOD_WINDOWS`` consecutive windows is closed with
``CLOSE_FLOODED`` (docs/api.md, WebSocket).

Per user (per client address for anonymous connections), across every server process: at
most ``WS_MAX_CONNECTIONS_PER_USER`` open connections (one more is closed with
``CLOSE_TOO_MANY_CONNECTIONS``) and ``WS_MAX_STREAMS_PER_USER`` followed streams over all of
them (one more is refused with a ``too_many_streams`` error). So one user adds at most that
many connections and streams to what a presence read (``who``, ``GET /api/v1/presence/``)
goes through. Each count is a Redis set of the user's connections (or streams), each
member prefixed with its server process's id; one script drops the members of servers that
stopped beating (``presence.py``: a killed server's members stop counting within
``PRESENCE_TTL_SECONDS``), counts the rest and adds the new member if there is room, so two
connections opening at once cannot both take the last place.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable
from typing import Any

from django.conf import settings

from exchange.redis_clients import redis_async_client as _redis

from .presence import SERVER_ID, servers_key

# The frame rate's clock (tests replace it to refill the bucket without waiting).
_clock = time.monotonic

# Seconds of one window of the flood answer: at most one ``rate_limited`` error in each.
RATE_WINDOW = 1.0
# Application close codes (the 4000s). Frames came past the rate for too long: 4029, as
# HTTP's 429. The user has as many connections open as they may: 4013, as 1013 (try again
# later).
CLOSE_FLOODED = 4029
CLOSE_TOO_MANY_CONNECTIONS = 4013


class Verdict(enum.Enum):
    PASS = "pass"  # handle the frame
    DROP = "drop"  # drop it silently: the client was told in this window
    WARN = "warn"  # drop it and send one ``rate_limited`` error: a new window
    CLOSE = "close"  # sustained overflow: close the connection with ``CLOSE_FLOODED``


class FrameRate:
    """A token bucket per connection: ``burst`` frames at once, then ``per_second`` frames a
    second, checked before a frame is parsed, so a flood costs one comparison per frame.

    A dropped frame opens a window of ``RATE_WINDOW`` seconds unless one is open; the first
    drop of a window is a ``WARN``, the others ``DROP``. Windows that follow one another
    (the next opens within a window's length of the last one's end) are counted, and the
    ``flood_windows``-th in a row is a ``CLOSE``; a quiet window resets the count."""

    def __init__(self, *, per_second: float, burst: int, flood_windows: int) -> None:
        self.per_second = per_second
        self.burst = burst
        self.flood_windows = flood_windows
        self.tokens = float(burst)
        self.stamp = _clock()
        self.window_start: float | None = None
        self.windows = 0  # consecutive windows with drops, the open one included

    def check(self) -> Verdict:
        now = _clock()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return Verdict.PASS
        start = self.window_start
        if start is not None and now - start < RATE_WINDOW:
            return Verdict.DROP
        following = start is not None and now - start < 2 * RATE_WINDOW
        self.windows = self.windows + 1 if following else 1
        self.window_start = now
        return Verdict.CLOSE if self.windows >= self.flood_windows else Verdict.WARN


# KEYS: the user's set, the live servers (a sorted set scored by last beat). ARGV: the time
# since which a server counts as alive, this server's id, the cap, the new member. Members
# are "<server id>|...". Returns 1 if the member was added (or was there), else 0.
_ADMIT = """
local alive_since = tonumber(ARGV[1])
if redis.call('SISMEMBER', KEYS[1], ARGV[4]) == 1 then return 1 end
local count = 0
for _, member in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local server = string.match(member, '^([^|]*)|')
  local beat = server and redis.call('ZSCORE', KEYS[2], server)
  if server == ARGV[2] or (beat and tonumber(beat) >= alive_since) then
    count = count + 1
  else
    redis.call('SREM', KEYS[1], member)
  end
end
if count >= tonumber(ARGV[3]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[1], 86400)
return 1
"""


def principal_of(scope: dict[str, Any]) -> str:
    """Whom a connection counts against: its user, or its client address (the peer, as
    uvicorn gives it from the trusted proxies' headers) when anonymous."""
    user = scope.get("user")
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    client = scope.get("client") or ("unknown",)
    return f"addr:{client[0]}"


def _key(kind: str, principal: str) -> str:
    return f"{settings.PRESENCE_PREFIX}:{kind}:{principal}"


def _member(*parts: str) -> str:
    return "|".join((SERVER_ID, *parts))


async def _admit(kind: str, principal: str, member: str, cap: int) -> bool:
    alive_since = str(time.time() - settings.PRESENCE_TTL_SECONDS)
    keys = [_key(kind, principal), servers_key()]
    # The stubs type eval for the sync and the asyncio client at once (str | Awaitable[str]).
    added = await _redis().eval(_ADMIT, 2, *keys, alive_since, SERVER_ID, str(cap), member)  # type: ignore[misc]
    return bool(added)


async def connection_admit(principal: str, channel: str) -> bool:
    """Count the connection ``channel`` against ``principal``, if they have room for it."""
    cap = settings.WS_MAX_CONNECTIONS_PER_USER
    return await _admit("connections", principal, _member(channel), cap)


async def stream_admit(principal: str, channel: str, stream: str) -> bool:
    """Count ``stream``, followed on ``channel``, against ``principal``, if there is room."""
    cap = settings.WS_MAX_STREAMS_PER_USER
    return await _admit("streams", principal, _member(channel, stream), cap)


async def caps_release(
    principal: str, channel: str, *, streams: Iterable[str] = (), connection: bool = False
) -> None:
    """Stop counting ``streams`` (and with ``connection``, the connection itself)."""
    members = [_member(channel, stream) for stream in streams]
    async with _redis().pipeline(transaction=False) as pipe:
        if members:
            pipe.srem(_key("streams", principal), *members)
        if connection:
            pipe.srem(_key("connections", principal), _member(channel))
        await pipe.execute()
