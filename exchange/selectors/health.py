"""The health of every component the exchange depends on."""

from __future__ import annotations

import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection


def _check_database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'btree_gist'")
        row = cursor.fetchone()
    return {"ok": True, "btree_gist": row[0] if row else None}


def _check_redis() -> dict[str, Any]:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        return {"ok": bool(client.ping())}
    finally:
        client.close()


def _check_worker() -> dict[str, Any]:
    from exchange.celery import app

    replies = app.control.ping(timeout=1.0)
    return {"ok": bool(replies), "workers": sorted(name for reply in replies for name in reply)}


def _check_channel_layer() -> dict[str, Any]:
    async def round_trip() -> bool:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        token = uuid.uuid4().hex
        await layer.send(channel, {"type": "health.check", "token": token})
        message = await layer.receive(channel)
        return message.get("token") == token

    return {"ok": async_to_sync(round_trip)()}


CHECKS = {
    "database": _check_database,
    "redis": _check_redis,
    "celery_worker": _check_worker,
    "channel_layer": _check_channel_layer,
}


def health_report() -> dict[str, Any]:
    """Each component's status; ``ok`` is true only when all of them are up."""
    components: dict[str, Any] = {}
    for name, check in CHECKS.items():
        try:
            components[name] = check()
        except Exception as exc:  # any failure of a dependency is a "down", never a 500
            components[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"ok": all(c["ok"] for c in components.values()), "components": components}
