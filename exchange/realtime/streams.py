"""Stream names (what clients subscribe to) and their channel-layer groups.

A stream is ``system``, ``market:<subject>``, ``offer:<id>`` or ``me``; the channel layer
only allows ``[A-Za-z0-9._-]`` in group names, so each stream maps to a group name here.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

SYSTEM_STREAM = "system"


def group_for(stream: str) -> str:
    """The channel-layer group of a stream (colons are not allowed in group names)."""
    return "stream." + stream.replace(":", ".")


def frame(*, stream: str, type: str, seq: int | None, data: Any) -> dict[str, Any]:
    return {"stream": stream, "type": type, "seq": seq, "data": data}


def stream_publish(*, stream: str, type: str, seq: int | None, data: Any) -> None:
    """Send one frame to every client subscribed to ``stream`` (call only after commit)."""
    layer = get_channel_layer()
    async_to_sync(layer.group_send)(
        group_for(stream),
        {"type": "stream.frame", "frame": frame(stream=stream, type=type, seq=seq, data=data)},
    )
