"""Reads for a bid's own page (``/bids/<id>/``, its owner and staff only): its story from
placing to how each auction it matched ended."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from exchange.models import Bid, Notification, OrderChange

# What each change of a bid reads as in its history.
_CHANGES = {
    "bid_placed": "placed",
    "bid_amended": "amended",
    "bid_withdrawn": "withdrawn",
}


@dataclass(frozen=True)
class HistoryEntry:
    """One step of a bid's story: a change of the bid (``kind`` placed, amended,
    withdrawn; ``version`` after it) or a personal notification about it (``kind`` its
    type, ``data`` its row: where it became best, was outbid, won or did not win)."""

    at: dt.datetime
    kind: str
    version: int | None = None
    data: dict[str, Any] | None = None


def bid_history(*, bid: Bid, limit: int = 500) -> list[HistoryEntry]:
    """The bid's story, oldest first: its changes (the rows the matching cycle takes in)
    and its buyer's notifications that name it (matching, standing, outcome)."""
    entries: list[HistoryEntry] = []
    version = 0
    for at, event in (
        OrderChange.objects.filter(side=OrderChange.Side.BID, order_id=bid.pk)
        .exclude(event=None)
        .order_by("id")
        .values_list("created_at", "event")[:limit]
    ):
        kind = _CHANGES.get(str((event or {}).get("type")))
        if kind is None:
            continue
        if kind in ("placed", "amended"):
            version += 1
        entries.append(HistoryEntry(at=at, kind=kind, version=version))
    for note in (
        Notification.objects.filter(recipient_id=bid.buyer_id, data__bid=bid.pk)
        .order_by("id")
        .only("type", "data", "created_at")[:limit]
    ):
        entries.append(HistoryEntry(at=note.created_at, kind=note.type, data=note.data))
    return sorted(entries, key=lambda e: e.at)
