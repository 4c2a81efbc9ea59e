"""Reads the WebSocket endpoint needs: which streams exist, a user's notifications after a
sequence number. Plain synchronous functions; the consumer
calls them through ``database_sync_to_async``."""

from __future__ import annotations

import re
from typing import Any

from exchange.models import Market, Notification, Offer
from matching.subjects import SubjectError, validate_subject

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
    """Up to ``limit`` of the user's notifications with an id above ``after``, oldest first,
    as ``{"id", "type", "data"}``."""
    rows = (
        Notification.objects.filter(recipient_id=user_id, id__gt=after)
        .order_by("id")
        .values("id", "type", "data")[:limit]
    )
    return [dict(row) for row in rows]
