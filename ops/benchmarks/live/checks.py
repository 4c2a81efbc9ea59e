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


def log_head() -> int:
    """The event log's last ``seq`` (0 while it is empty)."""
    (head,) = one_row(
        "SELECT coalesce((SELECT last_seq FROM exchange_eventcounter WHERE id = 1), 0)"
    )
    return int(head)


def log_settle() -> int:
    """Append to the log the best-offer changes the setup made (the book's rebuilds: one or
    more an offer), as the first matching cycle would otherwise do inside the first
    measured run, in one transaction of 10,000 and more events on SPEC 9's book; how many."""
    script = (
        "from django.db import transaction\n"
        "from exchange.services.events import events_append\n"
        "from exchange.services.matching import cycle_lock\n"
        "with transaction.atomic():\n"
        "    cycle_lock()\n"
        "    print(events_append())\n"
    )
    done = manage("shell", "-c", script, capture_output=True)
    return int(done.stdout.strip().splitlines()[-1])


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


def announced(bid_ids: list[int]) -> int:
    """How many of these bids were ever an offer's best bid (a row of the best-offer
    history names them), so a ``best_offer`` frame announced them. A bid overtaken on its
    offer by a later bid in the same cycle never is: its frame not being seen is right;
    an announced bid's is a lost frame."""
    (count,) = one_row(
        "SELECT count(DISTINCT bid_id) FROM exchange_bestofferchange WHERE bid_id = ANY(%s)",
        [bid_ids],
    )
    return int(count)


def verified() -> str:
    """The last line ``verify_best_offers`` says."""
    check = manage("verify_best_offers", capture_output=True, check=False)
    return (check.stdout + check.stderr).strip().splitlines()[-1]


# The stages of a bid's way to its frame, in order, each from the previous mark.
STAGES = (
    ("request", "POST to the bid's change row written (its request's insert)"),
    ("queue", "change row to the start of the cycle that took it"),
    ("cycle", "that cycle, start to finish (its commit follows)"),
    ("push", "end of the cycle to the frame on the client (commit, push, delivery)"),
)


def stages(timeline: list[dict[str, float | int]]) -> dict[str, list[float]]:
    """Where each bid's time to its frame went, in milliseconds per stage of ``STAGES``.

    ``timeline`` holds the driver's Unix times of each bid's POST and frame and the bid's
    id; the database gives its change row's time and the cycle that processed it (the
    cycle whose span holds the change's ``processed_at``). The driver and the stack share
    one clock: they run on one machine.
    """
    return stage_split(timeline, stage_marks(timeline))


def stage_marks(timeline: list[dict[str, float | int]]) -> dict[int, tuple[float, float, float]]:
    """Per bid id of ``timeline``: its change row written, and the start and end of the
    cycle that took it (Unix times; ``stages``)."""
    if not timeline:
        return {}
    ids = [int(t["id"]) for t in timeline]
    with psycopg.connect(DATABASE_URL) as conn:
        rows = conn.execute(
            "SELECT ch.order_id, extract(epoch FROM ch.created_at),"
            " extract(epoch FROM c.started_at), extract(epoch FROM c.finished_at)"
            " FROM exchange_orderchange ch JOIN exchange_matchingcycle c"
            " ON ch.processed_at BETWEEN c.started_at AND c.finished_at"
            " WHERE ch.side = 'bid' AND ch.order_id = ANY(%s)",
            [ids],
        ).fetchall()
    return {int(order): (float(a), float(b), float(c)) for order, a, b, c in rows}


def stage_split(
    timeline: list[dict[str, float | int]], marks: dict[int, tuple[float, float, float]]
) -> dict[str, list[float]]:
    """Each bid's stages in milliseconds, from the driver's ``post`` and ``frame`` times and
    ``marks``: the bid's change written, its cycle started and finished (Unix times, by bid
    id). A bid without marks (its change not found in a cycle) is left out."""
    out: dict[str, list[float]] = {name: [] for name, _ in STAGES}
    for t in timeline:
        found = marks.get(int(t["id"]))
        if found is None:
            continue
        written, started, finished = found
        points = (float(t["post"]), written, started, finished, float(t["frame"]))
        for (name, _), a, b in zip(STAGES, points, points[1:], strict=False):
            out[name].append((b - a) * 1000)
    return out
