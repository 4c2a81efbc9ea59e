"""The one WebSocket endpoint (SPEC 6.3, 6.5).

Client frames: ``{"action": "subscribe" | "unsubscribe", "stream": ...}``,
``{"action": "resume", "stream": "me", "after": <seq>}`` and
``{"action": "presence", "stream": ...}``. Server frames: ``{"stream", "type", "seq", "data"}``;
errors ``{"type": "error", "code", "message"}``. A bad frame gets an error frame and the
connection stays usable.
"""

from __future__ import annotations

import json
import re
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from .presence import presence_join, presence_leave, presence_watchers
from .streams import SYSTEM_STREAM, group_for, user_group

MAX_FRAME_BYTES = 4096
MAX_STREAMS = 200
BACKLOG_BATCH = 500
ME = "me"
SUBJECT_RE = re.compile(r"[a-z0-9]+(\.[a-z0-9]+)*\Z")
OFFER_RE = re.compile(r"[0-9]{1,18}\Z")


@database_sync_to_async
def _public_stream_exists(stream: str) -> bool:
    from exchange.models import Market, Offer

    kind, _, name = stream.partition(":")
    if kind == "market" and SUBJECT_RE.match(name):
        return Market.objects.filter(subject=name).exists()
    if kind == "offer" and OFFER_RE.match(name):
        return Offer.objects.filter(pk=int(name)).exists()
    return False


@database_sync_to_async
def _notifications_after(user_id: int, after: int) -> list[dict[str, Any]]:
    from exchange.models import Notification

    rows = (
        Notification.objects.filter(recipient_id=user_id, id__gt=after)
        .order_by("id")
        .values("id", "type", "data")[:BACKLOG_BATCH]
    )
    return [
        {
            "stream": ME,
            "type": "notification",
            "seq": r["id"],
            "data": {"type": r["type"], **r["data"]},
        }
        for r in rows
    ]


class StreamConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.streams: set[str] = set()
        self.user = self.scope.get("user")
        self.last_seq: int | None = (
            None  # the last personal notification sent (None: not following)
        )
        await self.accept()

    @property
    def authenticated(self) -> bool:
        return bool(self.user is not None and self.user.is_authenticated)

    async def disconnect(self, code: int) -> None:
        for stream in list(self.streams):
            await self._leave(stream)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        message = await self._parse(text_data)
        if message is None:
            return
        action, stream = message.get("action"), message.get("stream")
        if action not in ("subscribe", "unsubscribe", "resume", "presence"):
            await self._error(
                "unknown_action", 'The "action" is subscribe, unsubscribe, resume or presence.'
            )
            return
        if not isinstance(stream, str) or len(stream) > 250:
            await self._error(
                "unknown_stream", 'Name a "stream": market:<subject>, offer:<id>, me or system.'
            )
            return
        if action == "unsubscribe":
            await self._leave(stream)
            await self._send({"type": "unsubscribed", "stream": stream})
            return
        if not await self._allowed(stream):
            return
        if action == "presence":
            watchers = await presence_watchers(stream)
            data: dict[str, Any] = {"count": len(watchers)}
            if self.authenticated and self.user.is_staff:
                data["watchers"] = watchers
            await self._send({"stream": stream, "type": "presence", "seq": None, "data": data})
            return
        if action == "resume":
            after = message.get("after")
            if stream != ME or isinstance(after, bool) or not isinstance(after, int) or after < 0:
                await self._error(
                    "bad_frame", 'Resume the "me" stream after a sequence number: {"after": 42}.'
                )
                return
            await self._join(stream)
            await self._send({"type": "subscribed", "stream": stream})
            self.last_seq = after
            await self._catch_up()
            return
        if stream not in self.streams and len(self.streams) >= MAX_STREAMS:
            await self._error(
                "too_many_streams", f"A connection follows at most {MAX_STREAMS} streams."
            )
            return
        await self._join(stream)
        if stream == ME and self.last_seq is None:
            self.last_seq = await self._latest_seq()
        await self._send({"type": "subscribed", "stream": stream})

    async def _parse(self, text_data: str | None) -> dict | None:
        if text_data is None:
            await self._error("bad_frame", "Frames must be JSON text, not binary.")
            return None
        if len(text_data) > MAX_FRAME_BYTES or len(text_data.encode()) > MAX_FRAME_BYTES:
            await self._error("too_large", f"Frames are limited to {MAX_FRAME_BYTES} bytes.")
            return None
        try:
            message = json.loads(text_data)
        except ValueError:
            await self._error("bad_frame", "The frame is not valid JSON.")
            return None
        if not isinstance(message, dict):
            await self._error("bad_frame", 'A frame must be a JSON object with an "action".')
            return None
        return message

    async def _allowed(self, stream: str) -> bool:
        if stream == ME:
            if not self.authenticated:
                await self._error("forbidden", 'The "me" stream needs a logged-in user or a token.')
                return False
            return True
        if stream == SYSTEM_STREAM or await _public_stream_exists(stream):
            return True
        await self._error("unknown_stream", f"There is no stream {stream!r}.")
        return False

    def _group(self, stream: str) -> str:
        return user_group(self.user.pk) if stream == ME else group_for(stream)

    async def _join(self, stream: str) -> None:
        if stream in self.streams:
            return
        await self.channel_layer.group_add(self._group(stream), self.channel_name)
        self.streams.add(stream)
        name = self.user.get_username() if self.authenticated else "anonymous"
        await presence_join(stream, self.channel_name, name)

    async def _leave(self, stream: str) -> None:
        if stream not in self.streams:
            return
        await self.channel_layer.group_discard(self._group(stream), self.channel_name)
        self.streams.discard(stream)
        if stream == ME:
            self.last_seq = None
        await presence_leave(stream, self.channel_name)

    @database_sync_to_async
    def _latest_seq(self) -> int:
        from exchange.models import Notification

        last = (
            Notification.objects.filter(recipient_id=self.user.pk)
            .order_by("-id")
            .values_list("id", flat=True)
            .first()
        )
        return last or 0

    async def _catch_up(self) -> None:
        """Send the personal notifications after ``last_seq`` from the outbox, in order."""
        while self.last_seq is not None:
            frames = await _notifications_after(self.user.pk, self.last_seq)
            for item in frames:
                await self._send(item)
                self.last_seq = item["seq"]
            if len(frames) < BACKLOG_BATCH:
                return

    # -- channel-layer events ----------------------------------------------------------

    async def stream_frame(self, event: dict[str, Any]) -> None:
        await self._send(event["frame"])

    async def user_wake(self, event: dict[str, Any]) -> None:
        if ME in self.streams and self.last_seq is not None and event["seq"] > self.last_seq:
            await self._catch_up()

    async def _error(self, code: str, message: str) -> None:
        await self._send({"type": "error", "code": code, "message": message})

    async def _send(self, payload: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(payload, separators=(",", ":"), default=str))
