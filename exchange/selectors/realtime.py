"""Reads the WebSocket endpoint needs: which streams exist, a user's notifications after a
sequence number. Plain synchronous functions; the consumer
calls them through ``database_sync_to_async``."""

from __future__ import annotations

import re
from typing import Any

from exchange.models import Market, Offer
from exchange.selectors.orders import notification_list
from matching.subjects import SubjectError, validate_subject
from matching.values import format_timestamp_body

_OFFER_ID = re.compile(r"[0-9]{1,18}")


def public_stream_exists(*, stream: str) -> bool:
    """True for ``market:<subject>`` of an existing market and ``offer:<id>`` of an existing
    offer; the names are checked before any query."""
    kind, _, name = stream.partition(":")
    if kind == "market":
        try:
            validate_subject(name)
        except SubjectError:
            return False
        return Market.objects.filter(subject=name).exists()
    if kind == "offer" and _OFFER_ID.fullmatch(name):
        return Offer.objects.filter(pk=int(name)).exists()
    return False


def notifications_after(*, user_id: int, after: int, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` rows of ``notification_list`` as ``{"id", "type", "data",
    "time"}``, the fields of a ``me`` frame (``time``: when the notification was written,
    as SPEC 8.1 writes an event's time)."""
    rows = notification_list(user_id=user_id, after=after).values(
        "id", "type", "data", "created_at"
    )[:limit]
    return [
        {
            "id": row["id"],
            "type": row["type"],
            "data": row["data"],
            "time": format_timestamp_body(row["created_at"]),
        }
        for row in rows
    ]
