"""The engine's form 4 watches (issue 35 item 5): delivered by dissemination in the
process's ``WatchHub`` (``matching/dissemination/hosted.py``), which holds the open offers
once for all of them; what the engine needs around it.

* At a checkpoint the watches' snapshots leave the offers out and the hub's book is stored
  once, on the partitions' rows with the checkpoint's cursor (``hub_book``,
  ``leases.partitions_checkpointed``).
* A process restoring such a watch reads the book of its partition at the watch's cursor
  (``Books``), once for all the watches restored from it; a book missing or at another
  cursor leaves the snapshot stale, and the watch is rebuilt by replay as any stale
  checkpoint is (``engine._restored``).
* The optimizer's choices, each with its estimates and the seconds the change took, go to
  the staff dashboard's Redis log after the batch's commit (``choices_flush``).
"""

from __future__ import annotations

import logging

from exchange.dissemination.choices import choices_record
from exchange.subscription_engine.leases import partitions_books
from matching.dissemination.hosted import WatchHub
from matching.subscriptions.run.snapshot import SnapshotError, book_dump, book_load
from matching.subscriptions.watches.offers import OpenOffers

log = logging.getLogger(__name__)


def hub_book(hub: WatchHub, cursor: int) -> bytes | None:
    """The hub's open offers at ``cursor`` as a checkpoint stores them; None without a
    watch (no snapshot left them out)."""
    return book_dump(hub.offers, cursor) if len(hub) else None


class Books:
    """The books stored with the partitions' last checkpoints, read when first asked for,
    each loaded once (the open offers at a cursor are the log's: one per cursor)."""

    def __init__(self, partitions: set[int], count: int) -> None:
        self.partitions = partitions
        self.count = count
        self._rows: dict[int, tuple[int, bytes | None]] | None = None
        self._loaded: dict[int, OpenOffers | None] = {}

    def at(self, sub_id: int, cursor: int) -> OpenOffers | None:
        """The open offers at ``cursor`` stored with ``sub_id``'s partition, or None."""
        if self._rows is None:
            self._rows = partitions_books(partitions=self.partitions)
        stored, raw = self._rows.get(sub_id % self.count, (None, None))
        if raw is None or stored != cursor:
            return None
        if cursor not in self._loaded:
            try:
                at, offers = book_load(raw)
            except SnapshotError:
                log.warning("the book of open offers at %s is unreadable", cursor, exc_info=True)
                at, offers = -1, None
            self._loaded[cursor] = offers if at == cursor else None
        return self._loaded[cursor]


def choices_flush(hub: WatchHub) -> None:
    """The hub's choices since the last flush to the dashboard's Redis log (a report: a
    failure is logged, never raised)."""
    entries = hub.take_choices()
    if not entries:
        return
    try:
        choices_record(entries)
    except Exception:
        log.warning("recording the dissemination choices failed", exc_info=True)
