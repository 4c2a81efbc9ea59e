"""The ``sub:<id>`` streams of the WebSocket endpoint (SPEC 8.3): a live subscription's
notifications, to its owner only.

Client frames: ``{"action": "subscribe", "stream": "sub:<id>"}`` (from now on),
``{"action": "resume", "stream": "sub:<id>", "after": <n>}`` (the outbox after ``n``,
then live) and ``unsubscribe``. Server frames: ``{"type": "notification", "stream", "n",
"seq", "data"}`` for each notification, in ``n`` order, each once, and ``{"type": "end",
"stream"}`` once the subscription is done (completed or deleted). Anyone but the owner
gets an error frame, whether or not the subscription exists. ``{"type": "lagging"}`` and
``{"type": "caught_up"}`` frames come from beat's round (``services/subscription_lag.py``)
through the stream's group, as they are.

How each ``n`` arrives exactly once and in order, as for ``events:<pattern>``: per
stream the connection keeps the ``n`` up to which it has served the outbox. It joins the
stream's group first, then reads the subscription's last ``n`` and state and replays the
outbox up to that ``n``: every later notification is committed after the join, so it comes
live. Each live message carries a run ``first``-``last`` of consecutive notifications; the
connection skips what it has served and, when a run starts past its position (a push lost
with Redis), reads the gap from the outbox first. The consumer handles one message at a
time, so live messages wait in the channel during a replay.

With ``"batch": true`` in the ``resume`` (or ``subscribe``) frame, the stream's replays (the
resume's and a gap's) come in frames ``{"type": "batch", "stream", "n": <the last one's>,
"notifications": [{"n", "seq", "data"}, ...]}`` of many notifications (``replay.py``);
live notifications stay one frame each.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from channels.db import database_sync_to_async

from exchange.http import whole_number
from exchange.models import Subscription
from exchange.selectors.subscriptions import (
    subscription_notifications,
    subscription_owner_id,
    subscription_position,
)

from .replay import BATCH_USAGE, batch_flag, batch_frame, compact, frame_chunks
from .streams import group_for


class StreamConsumer(Protocol):
    """What the ``sub:<id>`` streams use of the connection that follows them (the
    consumer of ``consumers.py``, which imports this module: a protocol here keeps the two
    from importing each other)."""

    user: Any
    channel_layer: Any
    channel_name: str

    @property
    def authenticated(self) -> bool: ...

    async def _send(self, payload: dict[str, Any]) -> None: ...

    async def _send_text(self, text: str) -> None: ...

    async def _error(self, code: str, message: str, **detail: Any) -> None: ...

    async def _resume_point(self, stream: str, after: object, counted: str) -> int | None: ...

    async def _room_for(
        self, stream: str, followed: Collection[str], limit: int, kind: str
    ) -> bool: ...


KIND = "sub"
# ``sub:<id>`` streams one connection may follow.
MAX_FOLLOWED = 100
# A replay reads the outbox this many notifications a query and sends at most
# ``REPLAY_CAP`` for one request before asking the client to resume.
REPLAY_BATCH = 500
REPLAY_CAP = 20_000
# A batched replay reads the outbox this many notifications a query.
REPLAY_READ = 2000

_owner_id = database_sync_to_async(subscription_owner_id)
_position = database_sync_to_async(subscription_position)
_notifications = database_sync_to_async(subscription_notifications)


def is_subscription_stream(stream: str) -> bool:
    return stream.partition(":")[0] == KIND


def notification_frame(stream: str, note: dict[str, Any]) -> dict[str, Any]:
    return {"type": "notification", "stream": stream, **note}


class SubscriptionStreams:
    """The ``sub:<id>`` streams one connection follows: where each stands (the last ``n``
    served) and whether its ``end`` was sent."""

    def __init__(self, consumer: StreamConsumer) -> None:
        self.consumer = consumer
        self.positions: dict[str, int] = {}
        self.ended: set[str] = set()
        self.batched: set[str] = set()  # the streams replayed in ``batch`` frames

    async def receive(self, action: str, stream: str, message: dict[str, Any]) -> None:
        """A client frame about ``stream``, a ``sub:<id>``."""
        consumer = self.consumer
        if action == "unsubscribe":
            await self._leave(stream)
            await consumer._send({"type": "unsubscribed", "stream": stream})
            return
        if action not in ("subscribe", "resume"):
            await consumer._error(
                "bad_frame",
                f"{stream!r} takes subscribe, resume (with after) and unsubscribe.",
                stream=stream,
            )
            return
        if not consumer.authenticated:
            await consumer._error(
                "forbidden", "Subscription streams need a logged-in user or a token.", stream=stream
            )
            return
        number = whole_number(stream.partition(":")[2])
        if number is None or await _owner_id(subscription_id=number) != consumer.user.pk:
            await consumer._error(
                "unknown_stream", f"You have no subscription stream {stream!r}.", stream=stream
            )
            return
        batch = batch_flag(message)
        if batch is None:
            await consumer._error("bad_frame", f"{BATCH_USAGE} ({stream!r})", stream=stream)
            return
        start = None
        if action == "resume":
            start = await consumer._resume_point(
                stream, message.get("after"), "a notification number n"
            )
            if start is None:
                return
        if not await consumer._room_for(
            stream, self.positions, MAX_FOLLOWED, "subscription streams"
        ):
            return
        await self._join(stream)
        await consumer._send({"type": "subscribed", "stream": stream})
        position = await _position(subscription_id=number)
        if position is None:  # deleted with its owner meanwhile
            await self._leave(stream)
            return
        last_n, state = position
        self.positions[stream] = last_n if start is None else start
        self.ended.discard(stream)
        if batch:
            self.batched.add(stream)
        else:
            self.batched.discard(stream)
        if await self._replay(stream, upto=last_n) and state == Subscription.State.DONE:
            await self._end(stream)

    async def batch(self, message: dict[str, Any]) -> None:
        """A committed run of the stream's notifications (``first``-``last``, maybe empty)
        and whether the subscription ended with it."""
        stream = message["stream"]
        if stream not in self.positions:
            return
        first, last = message["first"], message["last"]
        behind = first is not None and self.positions[stream] < first - 1
        if behind and not await self._replay(stream, upto=last):
            return
        for note in message["notifications"]:
            if note["n"] > self.positions[stream]:
                await self.consumer._send(notification_frame(stream, note))
                self.positions[stream] = note["n"]
        if message["end"]:
            await self._end(stream)

    async def leave_all(self) -> None:
        for stream in list(self.positions):
            await self._leave(stream)

    async def _replay(self, stream: str, *, upto: int) -> bool:
        """Send the outbox after the stream's position up to ``upto``; False if it stopped
        at ``REPLAY_CAP`` (the stream is left with a ``replay_limit`` error)."""
        subscription_id = int(stream.partition(":")[2])
        batched = stream in self.batched
        sent = 0
        while self.positions[stream] < upto:
            want = min(REPLAY_READ, REPLAY_CAP - sent) if batched else REPLAY_BATCH
            notes = await _notifications(
                subscription_id=subscription_id,
                after=self.positions[stream],
                upto=upto,
                limit=want,
            )
            if batched:
                await self._send_batches(stream, notes)
            for note in notes:
                if not batched:
                    await self.consumer._send(notification_frame(stream, note))
                self.positions[stream] = note["n"]
            sent += len(notes)
            if len(notes) < want:
                break
            if sent >= REPLAY_CAP and self.positions[stream] < upto:
                position = self.positions[stream]
                await self._leave(stream)
                await self.consumer._error(
                    "replay_limit",
                    f"One resume replays at most {REPLAY_CAP} notifications: {stream!r} stopped "
                    f"after n = {position}; resume it after {position} for the rest.",
                    stream=stream,
                    after=position,
                )
                return False
        return True

    async def _send_batches(self, stream: str, notes: list[dict[str, Any]]) -> None:
        """``notes`` in ``batch`` frames (``replay.frame_chunks``' runs)."""
        texts = [compact(note) for note in notes]
        first = 0
        for run in frame_chunks(texts):
            first += len(run)
            envelope = {"type": "batch", "stream": stream, "n": notes[first - 1]["n"]}
            await self.consumer._send_text(batch_frame(envelope, "notifications", run))

    async def _end(self, stream: str) -> None:
        if stream not in self.ended:
            self.ended.add(stream)
            await self.consumer._send({"type": "end", "stream": stream})

    async def _join(self, stream: str) -> None:
        if stream not in self.positions:
            await self.consumer.channel_layer.group_add(
                group_for(stream), self.consumer.channel_name
            )
            self.positions[stream] = 0

    async def _leave(self, stream: str) -> None:
        if stream in self.positions:
            await self.consumer.channel_layer.group_discard(
                group_for(stream), self.consumer.channel_name
            )
            del self.positions[stream]
            self.ended.discard(stream)
            self.batched.discard(stream)
