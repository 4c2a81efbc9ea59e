"""The one WebSocket endpoint: clients subscribe to streams and receive typed frames."""

from __future__ import annotations

import json
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer

from .streams import SYSTEM_STREAM, group_for

MAX_FRAME_BYTES = 4096


class StreamConsumer(AsyncWebsocketConsumer):
    """Relays frames of the streams a client subscribed to; bad frames get an error frame."""

    async def connect(self) -> None:
        self.streams: set[str] = set()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for stream in list(self.streams):
            await self.channel_layer.group_discard(group_for(stream), self.channel_name)
        self.streams.clear()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            await self._error("bad_frame", "Frames must be JSON text, not binary.")
            return
        if len(text_data.encode()) > MAX_FRAME_BYTES:
            await self._error("too_large", f"Frames are limited to {MAX_FRAME_BYTES} bytes.")
            return
        try:
            message = json.loads(text_data)
        except ValueError:
            await self._error("bad_frame", "The frame is not valid JSON.")
            return
        if not isinstance(message, dict):
            await self._error("bad_frame", 'A frame must be a JSON object with an "action".')
            return
        action = message.get("action")
        stream = message.get("stream")
        if action not in ("subscribe", "unsubscribe"):
            await self._error(
                "unknown_action", 'The "action" must be "subscribe" or "unsubscribe".'
            )
            return
        if not isinstance(stream, str) or not self._stream_allowed(stream):
            await self._error("unknown_stream", f"There is no stream {stream!r} you can follow.")
            return
        if action == "subscribe":
            await self.channel_layer.group_add(group_for(stream), self.channel_name)
            self.streams.add(stream)
        else:
            await self.channel_layer.group_discard(group_for(stream), self.channel_name)
            self.streams.discard(stream)
        await self._send({"type": action + "d", "stream": stream})

    def _stream_allowed(self, stream: str) -> bool:
        return stream == SYSTEM_STREAM

    async def stream_frame(self, event: dict[str, Any]) -> None:
        await self._send(event["frame"])

    async def _error(self, code: str, message: str) -> None:
        await self._send({"type": "error", "code": code, "message": message})

    async def _send(self, payload: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(payload, separators=(",", ":"), default=str))
