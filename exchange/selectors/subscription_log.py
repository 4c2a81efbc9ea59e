"""The event log read once for many live subscriptions (SPEC 8.3), each event with its
owner so that every subscription applies its own visibility (SPEC 5.6) to the shared read
(``matching.subscriptions.run.multi.advance_members``)."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from django.db import connection, connections

from exchange.models.events import EVENT_TABLE
from exchange.selectors.history import LINE_SQL, history_source


def subscriptions_log_read(*, after: int, upto: int) -> list[tuple[int | None, dict[str, Any]]]:
    """Every event with ``after < seq <= upto``, in ``seq`` order, as ``(owner, event)``:
    ``owner`` the id of the user the event is private to (a bid's bidder) or None for a
    public event, the event as ``subscription_log_read`` gives it (the log's JSON line,
    ``selectors/history.py``, read back). From the replica once it holds ``upto``, else the
    primary (``history_source``). The caller bounds ``upto - after``."""
    using = history_source(upto=upto)
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT e.owner_id, {LINE_SQL} FROM {EVENT_TABLE} e "
            "WHERE e.seq > %s AND e.seq <= %s ORDER BY e.seq",
            [after, upto],
        )
        return [(owner, json.loads(line)) for owner, line in cursor.fetchall()]


# The log's end and the events after a cursor up to it (at most a batch), in one statement,
# so in one snapshot: every event up to the end it returns is committed and in the read.
# The events' rows are read in a subquery that ``OFFSET 0`` keeps apart, and their lines
# are written above it: with the line's expression inside the lateral read, PostgreSQL
# planned it once for each of the log's partitions on every run (about 2 ms of planning for
# 0.2 ms of work, pg_stat_statements on the live benchmark; kept apart, 0.2-0.4 ms in all).
TAIL = (
    f"SELECT c.last_seq, e.owner_id, {LINE_SQL} AS line FROM exchange_eventcounter c "
    f"LEFT JOIN LATERAL (SELECT * FROM {EVENT_TABLE} e "
    "WHERE e.seq > %s AND e.seq <= least(c.last_seq, %s) OFFSET 0) e ON true "
    "WHERE c.id = 1 ORDER BY e.seq"
)


def subscriptions_log_tail(
    *, after: int, most: int
) -> tuple[int, list[tuple[int | None, dict[str, Any]]]]:
    """The log's last ``seq`` (``events_log_end``; 0 for an empty log) and its events with
    ``after < seq <= min(that, after + most)``, as ``subscriptions_log_read`` gives them, in
    one statement on the primary: the subscription engine's live read, one a batch. The
    events were just appended, so the primary has them at once (``history_source`` would
    first ask a replica how far it is); and a psycopg cursor of its own binds the parameters
    on the server, so that psycopg prepares the statement after a few batches."""
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(TAIL, [after, after + most])
        rows = cursor.fetchall()
    if not rows:
        return 0, []
    return rows[0][0], [(owner, json.loads(line)) for _, owner, line in rows if line is not None]
