"""Round-trip checks of the database and the channel layer, for ``selectors/status.py``
(which reads Redis and the workers' heartbeats itself and builds the ``/healthz`` report)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connection


def _check_database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'btree_gist'")
        row = cursor.fetchone()
    return {"ok": True, "btree_gist": row[0] if row else None}


# How long the channel layer's round trip may take before it counts as down: the check runs
# on a request's thread, and a receive that never ended would hold that thread for good.
ROUND_TRIP_SECONDS = 5.0


def _check_channel_layer() -> dict[str, Any]:
    async def round_trip() -> bool:
        async with asyncio.timeout(ROUND_TRIP_SECONDS):
            layer = get_channel_layer()
            channel = await layer.new_channel()
            token = uuid.uuid4().hex
            await layer.send(channel, {"type": "health.check", "token": token})
            message = await layer.receive(channel)
        return message.get("token") == token

    return {"ok": async_to_sync(round_trip)()}


CHECKS = {
    "database": _check_database,
    "channel_layer": _check_channel_layer,
}
