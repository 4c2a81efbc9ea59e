"""Stream names (what clients subscribe to) and their channel-layer groups.

Streams: ``system``, ``market:<subject>``, ``offer:<id>`` (public) and ``me`` (a user's
personal notifications). The channel layer only allows ``[A-Za-z0-9._-]`` in group names, so
each stream maps to a group name here; ``me`` maps to the user's own group.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

SYSTEM_STREAM = "system"


def group_for(stream: str) -> str:
    """The channel-layer group of a public stream (colons are not allowed in group names)."""
    return "stream." + stream.replace(":", ".")


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


def frame(*, stream: str, type: str, seq: int | None, data: Any) -> dict[str, Any]:
    return {"stream": stream, "type": type, "seq": seq, "data": data}


def public_message(*, stream: str, type: str, seq: int | None, data: Any) -> tuple[str, dict]:
    """A frame for every client subscribed to public ``stream``: (group, channel message)."""
    return group_for(stream), {
        "type": "stream.frame",
        "frame": frame(stream=stream, type=type, seq=seq, data=data),
    }


def wake_message(*, user_id: int, seq: int) -> tuple[str, dict]:
    """Tell a user's connections that personal notifications up to ``seq`` are committed.

    The connections read them from the outbox themselves, in id order, so that each client
    gets every notification exactly once and in order whatever the order of the wake-ups.
    """
    return user_group(user_id), {"type": "user.wake", "seq": seq}


def group_send_all(messages: list[tuple[str, dict]]) -> None:
    """Send messages to groups in order, in one trip to the event loop (call after commit)."""

    async def send() -> None:
        layer = get_channel_layer()
        for group, message in messages:
            await layer.group_send(group, message)

    if messages:
        async_to_sync(send)()


def stream_publish(*, stream: str, type: str, seq: int | None, data: Any) -> None:
    group_send_all([public_message(stream=stream, type=type, seq=seq, data=data)])


def user_wake(*, user_id: int, seq: int) -> None:
    group_send_all([wake_message(user_id=user_id, seq=seq)])
