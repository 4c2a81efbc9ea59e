"""Stream names (what clients subscribe to) and their channel-layer groups.

Streams: ``system``, ``market:<subject>``, ``offer:<id>`` (public) and ``me`` (a user's
personal notifications). The channel layer only allows ``[A-Za-z0-9._-]`` in group names, so
each stream maps to a group name here; ``me`` maps to the user's own group.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import channel_layers, get_channel_layer
from channels_redis.core import RedisChannelLayer

from .patterns import PATTERN_KINDS, pattern_group

SYSTEM_STREAM = "system"


def group_for(stream: str) -> str:
    """The channel-layer group of a public stream (colons are not allowed in group names)."""
    return "stream." + stream.replace(":", ".")


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


def _digest(secret: str) -> str:
    # Group names live in Redis and logs: a digest of the key, never the key itself.
    return hashlib.sha256(secret.encode()).hexdigest()[:40]


def token_group(key: str) -> str:
    """The group of every connection authenticated with API token ``key``."""
    return "auth.token." + _digest(key)


def session_group(session_key: str) -> str:
    """The group of every connection authenticated by the login session ``session_key``."""
    return "auth.session." + _digest(session_key)


def account_group(user_id: int) -> str:
    """The group of every authenticated connection of user ``user_id``, however it logged in
    (closed when the account is deactivated or deleted)."""
    return f"auth.user.{user_id}"


def account_sessions_group(user_id: int) -> str:
    """The group of user ``user_id``'s connections that logged in with a session (closed when
    the password changes, which ends every session)."""
    return f"auth.user.{user_id}.sessions"


def revocation_groups(scope: Mapping[str, Any]) -> list[str]:
    """The groups an authenticated connection joins so that revoking what it logged in with
    (its token, or its session when it came with no token) or its account closes it."""
    user_id = scope["user"].pk
    token = scope.get("auth_token")
    if token:
        return [token_group(token), account_group(user_id)]
    session = scope.get("session")
    session_key = getattr(session, "session_key", None) if session is not None else None
    if not session_key:
        return [account_group(user_id)]
    return [session_group(session_key), account_sessions_group(user_id), account_group(user_id)]


def principal_revoke(*, groups: list[str]) -> None:
    """Close every connection in ``groups`` (call after the revocation committed)."""
    group_send_all([(group, {"type": "auth.revoked"}) for group in groups])


def frame(*, stream: str, type: str, seq: int | None, data: Any) -> dict[str, Any]:
    return {"stream": stream, "type": type, "seq": seq, "data": data}


def public_message(*, stream: str, type: str, seq: int | None, data: Any) -> tuple[str, dict]:
    """A frame for every client subscribed to public ``stream``: (group, channel message)."""
    return group_for(stream), {
        "type": "stream.frame",
        "frame": frame(stream=stream, type=type, seq=seq, data=data),
    }


def pattern_message(
    *, kind: str, subject: str, frame: dict[str, Any], owner: int | None = None
) -> tuple[str, dict]:
    """``frame`` (of a stream of ``kind`` about ``subject``) for the connections following
    a pattern of that kind; each sends it once per matching pattern stream, renamed to it
    (``patterns.py`` says why one shared group). With ``owner`` (a user id), only that
    user's and staff's connections get it (SPEC 5.6: a bid's events)."""
    return pattern_group(kind), {
        "type": "pattern.frame",
        "kind": kind,
        "subject": subject,
        "owner": owner,
        "frame": frame,
    }


def public_messages(
    *, stream: str, type: str, seq: int | None, data: Any
) -> list[tuple[str, dict]]:
    """What to send for a frame of public ``stream``: to its own group and, for a stream
    of a pattern kind (``market:<subject>``), to that kind's pattern group too."""
    group, message = public_message(stream=stream, type=type, seq=seq, data=data)
    messages = [(group, message)]
    kind, _, subject = stream.partition(":")
    if kind in PATTERN_KINDS:
        messages.append(pattern_message(kind=kind, subject=subject, frame=message["frame"]))
    return messages


def wake_message(*, user_id: int, seq: int) -> tuple[str, dict]:
    """Tell a user's connections that personal notifications up to ``seq`` are committed.

    The connections read them from the outbox themselves, in id order, so that each client
    gets every notification exactly once and in order whatever the order of the wake-ups.
    """
    return user_group(user_id), {"type": "user.wake", "seq": seq}


# Events one channel message carries at most (``events_messages``).
EVENTS_PER_MESSAGE = 100


def events_messages(events: list[dict[str, Any]]) -> list[tuple[str, dict]]:
    """Messages for the connections following ``events:<pattern>`` streams carrying
    ``events``, a run of the log with consecutive ``seq`` numbers (what one append wrote):
    each event in its REST form under ``data`` and its ``owner`` (a user id, or None when
    public). Every such connection gets every event, and the range ``first``-``last``
    with it, so it can tell when a message went missing and read the gap from the log."""
    messages = []
    for start in range(0, len(events), EVENTS_PER_MESSAGE):
        chunk = events[start : start + EVENTS_PER_MESSAGE]
        messages.append(
            (
                pattern_group("events"),
                {
                    "type": "events.batch",
                    "first": chunk[0]["data"]["seq"],
                    "last": chunk[-1]["data"]["seq"],
                    "events": chunk,
                },
            )
        )
    return messages


# The type of one channel message carrying several of one group's messages, in order
# (``group_send_all``); the consumer handles each as if it had come alone.
BATCH_TYPE = "stream.batch"


def group_batches(messages: list[tuple[str, dict]]) -> dict[str, dict]:
    """``messages`` as one channel message per group: a group's only message as it is, or
    its messages in the order given inside one ``BATCH_TYPE`` message."""
    by_group: dict[str, list[dict]] = {}
    for group, message in messages:
        by_group.setdefault(group, []).append(message)
    return {
        group: batch[0] if len(batch) == 1 else {"type": BATCH_TYPE, "messages": batch}
        for group, batch in by_group.items()
    }


def group_send_all(messages: list[tuple[str, dict]]) -> None:
    """Send messages to groups, in one trip to the event loop (call after commit): each
    group's messages in the order given, in one channel message, the groups side by side.

    A channels-redis ``group_send`` is three round trips to Redis; one after another, a
    cycle's few dozen messages made sending 14% of the matching worker's time (py-spy at 30
    bids/s). Each message a consumer receives costs it Redis round trips on its event loop,
    which in a server shares the process (and the GIL) with the requests' threads: 40 frames
    as 40 messages took a reader 75 ms on an idle machine and 1.2 s with a busy thread beside
    it, as one message 1 and 26 ms (``ops/benchmarks/layer_receive.py``); so a group's
    messages travel together. Only the order within a group is seen by anyone (a
    stream's frames, a user's wake-ups), so the groups need not wait for each other. A
    failure is raised once the other groups are sent."""

    by_group: dict[str, list[dict]] = {}
    for group, message in messages:
        by_group.setdefault(group, []).append(message)
    group_send_made({group: functools.partial(list, made) for group, made in by_group.items()})


def group_send_made(makers: dict[str, Callable[[], list[dict]]]) -> None:
    """``group_send_all`` for messages made only for the groups that have a member: each
    group of ``makers`` with what makes its messages, called (on the sending loop) only when
    the group has a member, or when it is the only group. The subscription engine pushes a
    batch's notifications to the ``sub:<id>`` groups of every notified subscription, most
    of which nobody follows; making all their messages first was a sixth of the engine's
    CPU (py-spy on ``ops/benchmarks/engine_batch.py --fanout 500``)."""

    async def send() -> None:
        layer = sending_layer()
        groups = list(makers)
        if len(groups) > 1 and isinstance(layer, RedisChannelLayer):
            groups = await _listened(layer, groups)
        made = [(group, message) for group in groups for message in makers[group]()]
        await _group_send_batches(layer, group_batches(made))

    if makers:
        run_sends(send)


async def _group_send_batches(layer: Any, batches: dict[str, dict]) -> None:
    """Each group its one channel message, side by side; the first failure raised once
    the others are sent."""
    results = await asyncio.gather(
        *(layer.group_send(group, message) for group, message in batches.items()),
        return_exceptions=True,
    )
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        raise failed[0]


# The keys with a member, asked in one command: KEYS the groups' keys, the answer the
# positions (from 1) of those whose sorted set is not empty, in order. Only the positions
# come back, not every size: most ``sub:<id>`` groups have none, and reading an answer of
# one integer a group in redis-py's parser was half of ``_listened``'s CPU (``cProfile``
# over 500 groups asked 50 times: 11.5 of 22.6 ms a time).
GROUP_SIZES = (
    "local n = {} for i, key in ipairs(KEYS) do "
    "if redis.call('ZCARD', key) > 0 then n[#n + 1] = i end end return n"
)
# Keys one such command takes at most.
GROUP_SIZES_KEYS = 5000


async def _listened(layer: RedisChannelLayer, groups: list[str]) -> list[str]:
    """The ``groups`` that have a member, in order, asked in one command per Redis
    connection (``GROUP_SIZES``, a script). channels-redis's ``group_send`` reads a group's
    members in two round trips even when it has none, which most ``sub:<id>`` groups are
    (nobody follows the stream): the subscription engine's push of a batch's notifications,
    to 10,000 subscriptions' groups, spent more time there than evaluating (py-spy, issue
    35). A pipeline of one ``ZCARD`` a group cost 6.4 us of the sender's CPU a group, the
    script 2.3 (500 groups asked 100 times, each way: 3.2 against 1.15 ms a time), and
    since it answers only the positions of the groups with a member, about 1.3.
    A group that gains a member meanwhile misses the message as it would inside
    ``group_send``; the streams' resume reads the gap."""
    by_connection: dict[int, list[str]] = {}
    for group in groups:
        by_connection.setdefault(layer.consistent_hash(group), []).append(group)
    kept: set[str] = set()
    for index, some in by_connection.items():
        connection = layer.connection(index)
        for start in range(0, len(some), GROUP_SIZES_KEYS):
            part = some[start : start + GROUP_SIZES_KEYS]
            keys = [layer._group_key(group) for group in part]  # channels-redis's keys
            found = await connection.eval(GROUP_SIZES, len(keys), *keys)
            kept.update(part[position - 1] for position in found)
    return [group for group in groups if group in kept]


# A process's loop for channel-layer sends made outside the server (Celery's worker
# processes, commands): ``async_to_sync`` there opens a new event loop for every call, and
# channels-redis new connections with it, 3.7 ms of CPU a send against 0.8 ms on a loop
# kept running (issue 18: most of what the log's writer added to a matching cycle).
_sending: tuple[int, asyncio.AbstractEventLoop] | None = None
_sending_lock = threading.Lock()
# How long a caller waits for its sends; past it they are given up (the caller's
# after-commit guard logs it; a lost push loses nothing, see ``events_push``).
SEND_SECONDS = 30


# The sending loop's own instance of the channel layer, beside the shared one it copies:
# channels-redis keeps connections per event loop in each layer object, and a ``flush()`` or
# ``close_pools()`` of the shared layer on another loop would try to close this loop's
# connections from there (asyncio refuses: "attached to a different loop").
_private: tuple[Any, Any] | None = None


def _sending_loop() -> asyncio.AbstractEventLoop:
    """This process's sending loop, started on first use (and again in a forked child,
    which does not inherit the thread that runs it)."""
    global _sending
    with _sending_lock:
        if _sending is None or _sending[0] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="channel-sends", daemon=True).start()
            _sending = (os.getpid(), loop)
        return _sending[1]


def sending_layer() -> Any:
    """The channel layer to send with on the running loop: the shared one, except on the
    sending loop, which has a private copy of the shared Redis layer (made again when the
    shared one is replaced, as when the ``CHANNEL_LAYERS`` setting changes)."""
    global _private
    shared = get_channel_layer()
    current = _sending
    on_sending_loop = (
        current is not None
        and current[0] == os.getpid()
        and asyncio.get_running_loop() is current[1]
    )
    if not on_sending_loop or not isinstance(shared, RedisChannelLayer):
        return shared
    if _private is None or _private[0] is not shared:
        _private = (shared, channel_layers.make_backend(DEFAULT_CHANNEL_LAYER))
    return _private[1]


def _server_thread() -> bool:
    """Whether this thread runs sync code for this process's server loop (a request under
    uvicorn, through asgiref): ``async_to_sync`` then sends on that loop, as it should."""
    threadlocal = SyncToAsync.threadlocal
    loop = getattr(threadlocal, "main_event_loop", None)
    # asgiref sets these the first time a thread runs sync code for a loop and never clears
    # them: a worker's main thread that once ran ``async_to_sync`` keeps a closed loop there.
    return (
        loop is not None
        and loop.is_running()
        and getattr(threadlocal, "main_event_loop_pid", None) == os.getpid()
    )


def run_sends(send: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``send`` (channel-layer sends) to its end from sync code: on the server's loop
    in a request's thread, else on this process's sending loop. Its failure is raised."""
    if _server_thread():
        async_to_sync(send)()
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:  # sync code called from a running loop's own thread: refused, as asgiref does
        async_to_sync(send)()
        return
    asyncio.run_coroutine_threadsafe(send(), _sending_loop()).result(timeout=SEND_SECONDS)


def stream_publish(*, stream: str, type: str, seq: int | None, data: Any) -> None:
    group_send_all(public_messages(stream=stream, type=type, seq=seq, data=data))


def user_wake(*, user_id: int, seq: int) -> None:
    group_send_all([wake_message(user_id=user_id, seq=seq)])
