"""Generated event logs for the history tests, and the Python path they are checked against."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.contrib.auth.models import AnonymousUser, User

from exchange.models import Event, EventCounter
from exchange.selectors.events import event_json, events_visible
from exchange.services.events import EventRow, events_insert


def log_write(rows: list[tuple[EventRow, dt.datetime]]) -> int:
    """Replace the log with ``rows`` (numbered from 1, in list order) and move the
    counter to its end; returns the last ``seq``."""
    Event.objects.all().delete()
    if rows:
        events_insert(rows, first_seq=1)
    EventCounter.objects.update_or_create(id=1, defaults={"last_seq": len(rows)})
    return len(rows)


def python_lines(user: User | AnonymousUser) -> bytes:
    """What ``format=jsonl`` sent before the log's lines were built in SQL: each visible
    event read through the ORM and dumped compactly by Python."""
    return b"".join(
        json.dumps(event_json(e), separators=(",", ":")).encode() + b"\n"
        for e in events_visible(user=user)
    )


def python_events(user: User | AnonymousUser) -> list[dict[str, Any]]:
    return [event_json(e) for e in events_visible(user=user)]
