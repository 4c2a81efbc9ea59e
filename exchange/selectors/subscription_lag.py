"""How far the live subscriptions are behind the log (issue 39): for the staff dashboard,
the ``sub:<id>`` streams' ``lagging`` frames (``exchange/subscription_lag_tasks.py``) and
the REST subscription's ``behind_events``.

The subscription engine commits a partition's ``cursor`` with each batch and writes a row's
own only at a checkpoint, so a subscription stands at the later of the two; a joiner still
reading its past between two checkpoints reads as its partition's cursor (its place is held
in the engine's memory).

A subscription is *lagging* when it is active, its cursor is before the log's end and the
first event it has not read is older than ``SUBSCRIPTION_LAG_SECONDS``: a quiet log whose
last event came a moment ago behind a subscription is not lag yet. ``behind_seconds`` is
that event's age.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import connection

from exchange.models import (
    EventCounter,
    Subscription,
    SubscriptionEngineProcess,
    SubscriptionPartition,
)
from exchange.models.events import EVENT_TABLE

# The most lagging subscriptions the dashboard lists (the worst first).
LAGGING_SHOWN = 50


def _standing() -> tuple[str, list[Any]]:
    """SQL of the active subscriptions as ``(id, owner_id, kind, cur)``, ``cur`` where each
    stands, and its parameters."""
    return (
        """
        SELECT s.id, s.owner_id, s.kind, GREATEST(s.cursor, coalesce(p.cursor, 0)) AS cur
        FROM exchange_subscription s
        LEFT JOIN exchange_subscriptionpartition p ON p.partition = s.id %% %s
        WHERE s.state = 'active'
        """,
        [settings.SUBSCRIPTION_ENGINE_PARTITIONS],
    )


def log_end() -> int:
    return EventCounter.objects.filter(id=1).values_list("last_seq", flat=True).first() or 0


def subscriptions_lagging(
    *, now: dt.datetime, seconds: float | None = None, limit: int | None = LAGGING_SHOWN
) -> dict[str, Any]:
    """The active subscriptions lagging at ``now`` by more than ``seconds`` (default
    ``SUBSCRIPTION_LAG_SECONDS``), the longest behind first (then by id): ``rows`` of
    ``id``, ``owner_id``, ``owner`` (username), ``kind``, ``behind_events`` and
    ``behind_seconds`` (a float), at most ``limit`` (None: all); ``total`` counts them all.

    One statement: the event after each distinct cursor is one probe of the log's primary
    key (subscriptions crowd at a few cursors), the log's end one row."""
    if seconds is None:
        seconds = settings.SUBSCRIPTION_LAG_SECONDS
    standing, params = _standing()
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH head AS (SELECT coalesce(max(last_seq), 0) AS seq
                          FROM exchange_eventcounter WHERE id = 1),
                 subs AS ({standing}),
                 behind AS (SELECT subs.* FROM subs, head WHERE subs.cur < head.seq),
                 waiting AS (
                     SELECT c.cur, e.time FROM (SELECT DISTINCT cur FROM behind) c
                     JOIN LATERAL (SELECT time FROM {EVENT_TABLE} WHERE seq = c.cur + 1) e
                       ON true
                 ),
                 lagging AS (
                     SELECT behind.id, behind.owner_id, behind.kind,
                            head.seq - behind.cur AS events,
                            extract(epoch FROM %s - waiting.time)::float8 AS secs
                     FROM behind JOIN waiting ON waiting.cur = behind.cur, head
                     WHERE waiting.time < %s
                 )
            SELECT lagging.id, lagging.owner_id, u.username, lagging.kind, lagging.events,
                   lagging.secs, count(*) OVER ()
            FROM lagging JOIN auth_user u ON u.id = lagging.owner_id
            ORDER BY lagging.secs DESC, lagging.id
            LIMIT %s
            """,
            [*params, now, now - dt.timedelta(seconds=seconds), limit],
        )
        found = cursor.fetchall()
    return {
        "total": found[0][6] if found else 0,
        "rows": [
            {
                "id": sub_id,
                "owner_id": owner_id,
                "owner": owner,
                "kind": kind,
                "behind_events": events,
                "behind_seconds": secs,
            }
            for sub_id, owner_id, owner, kind, events, secs, _ in found
        ],
    }


def subscription_behind_events(subscription: Subscription) -> int | None:
    """How many events of the log ``subscription`` has still to read; None unless it is
    active (a paused one stands still on purpose, an ended one has nothing to read)."""
    if subscription.state != Subscription.State.ACTIVE:
        return None
    partition = (
        SubscriptionPartition.objects.filter(
            partition=subscription.pk % settings.SUBSCRIPTION_ENGINE_PARTITIONS
        )
        .values_list("cursor", flat=True)
        .first()
    )
    return max(log_end() - max(subscription.cursor, partition or 0), 0)


def engine_partitions_lag(*, now: dt.datetime) -> list[dict[str, Any]]:
    """Each of the engine's partitions (``SUBSCRIPTION_ENGINE_PARTITIONS``) in order:
    ``partition``, ``owner`` ("" when nobody holds its lease now), ``cursor``,
    ``behind_events``, ``behind_seconds`` (the age of the first event after its cursor, 0
    when it is at the end) and ``checkpoint_age`` (seconds since its evaluators were last
    stored, None if never). A partition without a row yet stands at 0. One statement."""
    count = settings.SUBSCRIPTION_ENGINE_PARTITIONS
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH head AS (SELECT coalesce(max(last_seq), 0) AS seq
                          FROM exchange_eventcounter WHERE id = 1)
            SELECT g.n,
                   CASE WHEN p.expires_at > %s THEN coalesce(p.owner, '') ELSE '' END,
                   coalesce(p.cursor, 0),
                   greatest(head.seq - coalesce(p.cursor, 0), 0),
                   CASE WHEN coalesce(p.cursor, 0) >= head.seq THEN 0
                        ELSE extract(epoch FROM %s - e.time)::float8 END,
                   extract(epoch FROM %s - p.checkpointed_at)::float8
            FROM generate_series(0, %s - 1) AS g(n)
            CROSS JOIN head
            LEFT JOIN exchange_subscriptionpartition p ON p.partition = g.n
            LEFT JOIN LATERAL (
                SELECT time FROM {EVENT_TABLE} WHERE seq = coalesce(p.cursor, 0) + 1
            ) e ON coalesce(p.cursor, 0) < head.seq
            ORDER BY g.n
            """,
            [now, now, now, count],
        )
        return [
            {
                "partition": n,
                "owner": owner,
                "cursor": cur,
                "behind_events": events,
                "behind_seconds": secs,
                "checkpoint_age": age,
            }
            for n, owner, cur, events, secs, age in cursor.fetchall()
        ]


# The most engine processes the dashboard lists (the live ones first).
PROCESSES_SHOWN = 20


def engine_processes_lag(
    *, now: dt.datetime, partitions: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each subscription engine process from its heartbeat row, the live ones (beaten
    within ``SUBSCRIPTION_ENGINE_LEASE_SECONDS`` of ``now``) first by name, then those that
    stopped beating, the latest first; at most ``PROCESSES_SHOWN``. ``partitions`` is
    ``engine_partitions_lag(now=now)``: a process's ``partitions`` are those whose lease it
    holds there, its ``behind_events``/``behind_seconds`` the most any of them is behind
    (the heartbeat's own ``lag`` when it holds none) and ``checkpoint_age`` the age of its
    latest checkpoint (None: none yet). Also ``name``, ``live``, ``heartbeat_age`` (s),
    ``started_at`` and ``subscriptions`` (its live set at its last beat). One query."""
    lease = dt.timedelta(seconds=settings.SUBSCRIPTION_ENGINE_LEASE_SECONDS)
    held: dict[str, list[dict[str, Any]]] = {}
    for p in partitions:
        if p["owner"]:
            held.setdefault(p["owner"], []).append(p)
    rows = []
    # The live ones beat last, so the latest beats are the ones to list
    for process in SubscriptionEngineProcess.objects.order_by("-heartbeat_at", "name")[
        :PROCESSES_SHOWN
    ]:
        own = held.get(process.name, [])
        ages = [p["checkpoint_age"] for p in own if p["checkpoint_age"] is not None]
        rows.append(
            {
                "name": process.name,
                "live": process.heartbeat_at > now - lease,
                "heartbeat_age": max((now - process.heartbeat_at).total_seconds(), 0.0),
                "started_at": process.started_at,
                "subscriptions": process.subscriptions,
                "partitions": [p["partition"] for p in own],
                "behind_events": max((p["behind_events"] for p in own), default=process.lag),
                "behind_seconds": max((p["behind_seconds"] for p in own), default=None),
                "checkpoint_age": min(ages, default=None),
            }
        )
    # The live by name, then the stopped, the latest to stop first
    rows.sort(key=lambda r: (not r["live"], 0.0 if r["live"] else r["heartbeat_age"], r["name"]))
    return rows
