"""What the bench reads back from its database: the book's size, the best value to beat,
the matching cycles of the run, whether every acknowledged bid was stored, and the verdict of
``manage.py verify_best_offers``."""

from __future__ import annotations

import time
from typing import Any

import psycopg

from .provision import DATABASE_URL, manage


def one_row(query: str, params: list[Any] | None = None) -> tuple[Any, ...]:
    """The single row of an aggregate query on the bench database."""
    with psycopg.connect(DATABASE_URL) as conn:
        row = conn.execute(query, params).fetchone()
    if row is None:
        raise RuntimeError(f"no row from {query!r}")
    return tuple(row)


def best_value_cents() -> int:
    """The highest best value in the book, in cents: every bid the load sends beats it (the
    book's own bids stop at 1.49; a reused book also holds the bids of earlier runs)."""
    (top,) = one_row("SELECT max(value) FROM exchange_bestoffer")
    return max(150, int(top * 100) if top is not None else 0)


def book_size() -> tuple[int, int]:
    """Open offers and active bids in the book now."""
    offers, bids = one_row(
        "SELECT (SELECT count(*) FROM exchange_offer WHERE state = 'open'),"
        " (SELECT count(*) FROM exchange_bid WHERE state = 'active')"
    )
    return int(offers), int(bids)


def outbox_settle() -> None:
    """Mark the setup's notifications delivered: nobody listens for them, and the sweep would
    otherwise push tens of thousands of them during the measurement."""
    with psycopg.connect(DATABASE_URL) as conn:
        conn.execute(
            "UPDATE exchange_notification SET delivered_at = now() WHERE delivered_at IS NULL"
        )


def cycle_stats(since: float, until: float | None = None) -> dict[str, float]:
    """The matching cycles that started at or after ``since`` (and before ``until``; Unix
    times)."""
    count, mean_ms, mean_changes, max_ms = one_row(
        "SELECT count(*), coalesce(avg(extract(epoch FROM finished_at - started_at)) * 1000, 0),"
        " coalesce(avg(changes), 0), coalesce(max(extract(epoch FROM finished_at - started_at))"
        " * 1000, 0) FROM exchange_matchingcycle WHERE started_at >= to_timestamp(%s)"
        " AND started_at < to_timestamp(%s)",
        [since, until if until is not None else time.time() + 86400],
    )
    return {
        "count": count,
        "mean_ms": float(mean_ms),
        "mean_changes": float(mean_changes),
        "max_ms": float(max_ms),
    }


def stored(acknowledged: list[int]) -> int:
    """How many of the acknowledged bids are stored."""
    (count,) = one_row("SELECT count(*) FROM exchange_bid WHERE id = ANY(%s)", [acknowledged])
    return int(count)


def verified() -> str:
    """The last line ``verify_best_offers`` says."""
    check = manage("verify_best_offers", capture_output=True, check=False)
    return (check.stdout + check.stderr).strip().splitlines()[-1]
