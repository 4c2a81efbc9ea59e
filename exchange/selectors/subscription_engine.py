"""The subscription engine's processes as ``/healthz`` and the staff see them (issue 35)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import connection

from exchange.models import SubscriptionEngineProcess, SubscriptionPartition


def subscription_engine_status() -> dict[str, Any]:
    """The processes that beat within a lease (name, partitions, cursor, lag in events,
    subscriptions followed) and the partitions nobody holds."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        row = cursor.fetchone()
    assert row is not None
    now = row[0]
    live_since = now - dt.timedelta(seconds=settings.SUBSCRIPTION_ENGINE_LEASE_SECONDS)
    processes = [
        {
            "name": p.name,
            "partitions": p.partitions,
            "cursor": p.cursor,
            "lag": p.lag,
            "subscriptions": p.subscriptions,
        }
        for p in SubscriptionEngineProcess.objects.filter(heartbeat_at__gt=live_since).order_by(
            "name"
        )
    ]
    count = settings.SUBSCRIPTION_ENGINE_PARTITIONS
    held = SubscriptionPartition.objects.filter(partition__lt=count, expires_at__gt=now).exclude(
        owner=""
    )
    unheld = count - held.count()
    return {"processes": processes, "unheld": unheld}
