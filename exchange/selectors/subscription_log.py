"""The event log read once for many live subscriptions (SPEC 8.3), each event with its
owner so that every subscription applies its own visibility (SPEC 5.6) to the shared read
(``matching.subscriptions.run.multi.advance_members``)."""

from __future__ import annotations

import json
from typing import Any

from django.db import connections

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
