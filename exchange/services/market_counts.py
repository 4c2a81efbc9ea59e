"""Folding the rows of ``MarketOrderCount`` (written by triggers on the order tables) into
one row per market, so that reading a market's counts sums a few rows, not every change."""

from __future__ import annotations

from django.db import connection, transaction


def market_counts_compact() -> int:
    """Replace every market's count rows by one holding their sums, and drop the rows of
    markets that no longer exist; returns the rows folded.

    One statement: readers see the rows before or after it, never half of it, and rows
    inserted meanwhile are not in its snapshot, so they stay for the next compaction.
    Safe to run at any time and twice at once (a row is deleted, and summed, once).
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            """
            WITH gone AS (
                DELETE FROM exchange_marketordercount RETURNING market_id, offers, bids
            ),
            kept AS (
                INSERT INTO exchange_marketordercount (market_id, offers, bids)
                SELECT g.market_id, sum(g.offers), sum(g.bids)
                FROM gone g JOIN exchange_market m ON m.id = g.market_id
                GROUP BY g.market_id
            )
            SELECT count(*) FROM gone
            """
        )
        (folded,) = cursor.fetchone()
    return int(folded)
