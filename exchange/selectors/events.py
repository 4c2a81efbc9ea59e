"""Reading the event log (SPEC 8.1) with the visibility rules of SPEC 5.6."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from exchange.models import Event, EventCounter, Market
from exchange.selectors.history import HistoryWhere, history_events
from matching.subjects import compile_pattern
from matching.values import format_timestamp_body

# The columns of an event, in the order ``event_row_json`` takes them.
EVENT_COLUMNS = ("seq", "time", "type", "subject", "data")


def event_row_json(
    seq: int, time: dt.datetime | str, type: str, subject: str, data: dict[str, Any]
) -> dict[str, Any]:
    """An event as SPEC 8.1 writes it (and ``subscription_run`` reads it): the envelope,
    then the attributes of its type. ``time`` may come as ``format_timestamp_body`` wrote
    it: the writer's events of one cycle share one time, formatted once (a third of the
    writer's Python time when each of a cycle's 240 events formatted it again)."""
    return {
        "seq": seq,
        "time": time if isinstance(time, str) else format_timestamp_body(time),
        "type": type,
        "subject": subject,
        **data,
    }


def event_json(event: Event) -> dict[str, Any]:
    return event_row_json(event.seq, event.time, event.type, event.subject, event.data)


def events_visible(
    *,
    user: User | AnonymousUser,
    after: int | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> QuerySet[Event]:
    """The events ``user`` may see, in ``seq`` order: everyone sees the public ones, a
    bidder its own ``bid_*`` events too, staff all. ``since`` (inclusive) and ``until``
    (exclusive) bound ``time``, which lets PostgreSQL skip the other days' partitions."""
    events = Event.objects.order_by("seq")
    if not user.is_staff:
        visible = Q(owner=None)
        if user.is_authenticated:
            visible |= Q(owner=user)
        events = events.filter(visible)
    if after is not None:
        events = events.filter(seq__gt=after)
    if since is not None:
        events = events.filter(time__gte=since)
    if until is not None:
        events = events.filter(time__lt=until)
    return events


def events_read(
    *,
    user: User | AnonymousUser,
    subject: str | None = None,
    types: list[str] | None = None,
    after: int | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> QuerySet[Event]:
    """``events_visible`` narrowed to the markets whose subject matches the pattern
    ``subject`` (``SubjectError`` if it is not one) and to ``types``."""
    events = events_visible(user=user, after=after, since=since, until=until)
    if subject is not None:
        pattern = compile_pattern(subject)
        if pattern.is_literal:
            events = events.filter(subject=subject)
        else:
            # Markets are few and the pattern's rule lives in one place (matching.subjects).
            names = [
                m for m in Market.objects.values_list("subject", flat=True) if pattern.matches(m)
            ]
            events = events.filter(subject__in=names)
    if types:
        events = events.filter(type__in=types)
    return events


def events_log_end() -> int:
    """The ``seq`` of the last committed event (0 for an empty log): every event up to it
    is readable now, and every later one is pushed live after its commit."""
    last = EventCounter.objects.filter(id=1).values_list("last_seq", flat=True).first()
    return last or 0


def events_page(
    *, user: User | AnonymousUser, subject: str, after: int, upto: int, limit: int
) -> list[dict[str, Any]]:
    """At most ``limit`` of the events ``user`` may see about subjects matching the
    pattern ``subject`` with ``after`` < ``seq`` <= ``upto``, in ``seq`` order, each as
    ``event_row_json`` writes it (a historic read in SQL, ``selectors/history.py``)."""
    where = HistoryWhere(subject=subject)
    return list(history_events(user=user, after=after, upto=upto, where=where, limit=limit))
