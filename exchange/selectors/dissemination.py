"""What the staff dashboard reads about dissemination."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, cast

from exchange.dissemination.choices import KEPT, choices_key
from exchange.redis_clients import redis_client
from matching.dissemination import STRATEGIES


def dissemination_choices(*, limit: int = 100) -> list[dict[str, Any]]:
    """The optimizer's latest choices with their estimates, newest first (at most ``KEPT``)."""
    if limit < 1:
        return []
    raw = cast(list[bytes], redis_client().lrange(choices_key(), 0, min(limit, KEPT) - 1))
    return [json.loads(item) for item in raw]


def dissemination_recent(*, limit: int = 20) -> list[dict[str, Any]]:
    """The latest choices laid out for the dashboard, newest first: ``at`` (a datetime),
    ``seq``, ``choice``, ``estimates`` as ``(strategy, messages, bytes, milliseconds)`` in
    the order of ``STRATEGIES``, ``chosen_ms`` (the chosen strategy's estimate) and
    ``measured_ms`` (what the change took, None when it was not measured)."""
    rows = []
    for c in dissemination_choices(limit=limit):
        estimates = [
            (s, e["messages"], e["bytes"], e["seconds"] * 1000)
            for s in STRATEGIES
            if (e := c["estimates"].get(s)) is not None
        ]
        measured = c.get("measured_seconds")
        rows.append(
            {
                "at": dt.datetime.fromisoformat(c["at"]),
                "seq": c["seq"],
                "choice": c["choice"],
                "estimates": estimates,
                "chosen_ms": c["estimates"][c["choice"]]["seconds"] * 1000,
                "measured_ms": None if measured is None else measured * 1000,
            }
        )
    return rows
