"""What the staff dashboard shows of SPEC 8 (issue 23): the event log's head, the replica's
lag, the log's partitions, the live subscriptions by kind and state, the suspended ones and
the patterns' partial-match instances. Each selector returns plain data (dicts, lists,
numbers, datetimes) and answers in a bounded number of cheap queries; none of them raises
because the replica is away.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Length

from exchange.models import EventCounter, Subscription, SubscriptionNotification
from exchange.models.events import EVENT_TABLE
from matching.subscriptions.run.snapshot import snapshot_load

log = logging.getLogger(__name__)

# The partition for times no daily partition covers (named as the model's docstring says;
# services.event_partitions creates the daily ones and empties this one into them).
DEFAULT_PARTITION = f"{EVENT_TABLE}_default"

# SPEC 8.3's forms, as the subscriptions' ``kind`` names them, in the SPEC's order.
FORMS = (
    ("events", "form 1: events"),
    ("composite", "form 2: composite"),
    ("pattern", "form 3: pattern"),
    ("state", "form 4: watch"),
)
STATES = tuple(Subscription.State.values)
# Seconds the dashboard waits for the replica to answer before calling it unreachable.
REPLICA_TIMEOUT = 2
# The most suspended subscriptions and pattern subscriptions the page lists.
SUSPENDED_SHOWN = 50
PATTERNS_SHOWN = 50


def log_head() -> dict[str, Any]:
    """The last committed event's ``seq`` and ``time`` (``seq`` 0 and no time for an
    empty log). The counter's own time is not the event's: registrations move it up to
    their ``NOW``, so the time is read from the event row."""
    seq = EventCounter.objects.filter(id=1).values_list("last_seq", flat=True).first() or 0
    at = None
    if seq:
        with connection.cursor() as cursor:
            # Every partition's primary key starts with seq: one index probe per partition.
            cursor.execute(f"SELECT time FROM {EVENT_TABLE} WHERE seq = %s", [seq])
            row = cursor.fetchone()
        at = row[0] if row else None
    return {"seq": seq, "time": at}


def log_partitions() -> list[dict[str, Any]]:
    """Every partition of the log, in order of the days they hold (the default partition
    last): ``name``, ``bounds`` (PostgreSQL's text of the range), ``rows`` and ``bytes``
    (``pg_total_relation_size``: table, indexes and TOAST).

    ``rows`` of a daily partition is ``max(seq) - min(seq) + 1``, two probes of its primary
    key instead of a scan: ``seq`` has no holes and ``time`` never goes back as ``seq``
    grows (the writer keeps both), so one day's events are one unbroken run of ``seq``. The
    default partition may hold runs from before and after the daily ones, so it is counted
    (beat moves its rows out, so it stays small)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), pg_total_relation_size(c.oid)
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = %s::regclass
            ORDER BY c.relname = %s, c.relname
            """,
            [EVENT_TABLE, DEFAULT_PARTITION],
        )
        found = cursor.fetchall()
        if not found:
            return []
        # One statement for every partition's count. The names come from pg_class and are
        # the writer's own (exchange_event_p...), quoted all the same.
        counts = " UNION ALL ".join(
            f"SELECT {i}, "
            + (
                f"count(*) FROM {connection.ops.quote_name(name)}"
                if name == DEFAULT_PARTITION
                else f"coalesce(max(seq) - min(seq) + 1, 0) FROM {connection.ops.quote_name(name)}"
            )
            for i, (name, _, _) in enumerate(found)
        )
        cursor.execute(counts)
        rows = dict(cursor.fetchall())
    return [
        {"name": name, "bounds": bounds, "rows": rows[i], "bytes": nbytes}
        for i, (name, bounds, nbytes) in enumerate(found)
    ]


def _primary_senders() -> list[dict[str, Any]]:
    """The standbys streaming from the primary (``pg_stat_replication``), each with how far
    its replay is behind in bytes of WAL and in seconds (``replay_lag``, None while idle).
    PostgreSQL shows ``state`` and the positions only to a role with ``pg_read_all_stats``;
    for others they are None."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT application_name, state,
                   pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint,
                   extract(epoch FROM replay_lag)::float8
            FROM pg_stat_replication ORDER BY application_name, pid
            """
        )
        return [
            {"name": name, "state": state, "lag_bytes": nbytes, "lag_seconds": seconds}
            for name, state, nbytes, seconds in cursor.fetchall()
        ]


def replica_status() -> dict[str, Any]:
    """The replica that historic reads go to (``HISTORY_DATABASE_URL``):

    * ``configured`` False when the setting is unset (historic reads use the primary);
    * else ``reachable``, and when it answered: ``standby`` (in recovery), ``lag_bytes``
      (WAL received but not yet replayed) and ``lag_seconds`` (0 when everything received
      is replayed, else the age of the last replayed commit: an idle primary sends no
      commits, so that age alone would grow without any lag), or ``error`` when it did not;
    * ``senders``: what the primary itself says of its standbys (``pg_stat_replication``).

    The replica is asked on a connection of its own with a short timeout, so a replica that
    is down or paused makes this answer "unreachable" within ``REPLICA_TIMEOUT`` seconds."""
    url = settings.HISTORY_DATABASE_URL
    out: dict[str, Any] = {"configured": bool(url), "senders": _primary_senders()}
    if not url:
        return out
    try:
        with psycopg.connect(url, connect_timeout=REPLICA_TIMEOUT, autocommit=True) as replica:
            row = replica.execute(
                """
                SELECT pg_is_in_recovery(),
                       pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::bigint,
                       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())
                       END::float8
                """
            ).fetchone()
    except psycopg.Error as exc:
        log.warning("the replica at HISTORY_DATABASE_URL did not answer: %s", exc)
        return {**out, "reachable": False, "error": (str(exc).strip() or type(exc).__name__)[:300]}
    assert row is not None
    standby, nbytes, seconds = row
    return {
        **out,
        "reachable": True,
        "standby": standby,
        "lag_bytes": nbytes,
        "lag_seconds": seconds,
    }


def subscriptions_by_kind() -> list[dict[str, Any]]:
    """One row per form (``kind``, ``label``) with the count of its subscriptions in each
    state (``counts``, every state present) and ``total``."""
    counts: dict[tuple[str, str], int] = {
        (row["kind"], row["state"]): row["n"]
        for row in Subscription.objects.values("kind", "state").annotate(n=Count("id"))
    }
    rows = []
    for kind, label in FORMS:
        by_state = {state: counts.get((kind, state), 0) for state in STATES}
        rows.append(
            {"kind": kind, "label": label, "counts": by_state, "total": sum(by_state.values())}
        )
    return rows


def subscriptions_suspended(*, limit: int = SUSPENDED_SHOWN) -> dict[str, Any]:
    """The latest ``limit`` suspended subscriptions, newest id first: ``id``, ``owner``
    (username), ``kind``, ``reason`` and ``at``, when it was suspended, which is when its
    last notification was written (a suspension always writes one: the ``state_limit`` or
    ``runtime_error`` notice); ``total`` counts them all."""
    suspended = Subscription.objects.filter(state=Subscription.State.SUSPENDED)
    last_written = SubscriptionNotification.objects.filter(subscription=OuterRef("pk")).order_by(
        "-n"
    )
    rows = (
        suspended.order_by("-id")
        .annotate(at=Subquery(last_written.values("created_at")[:1]))
        .values("id", "owner__username", "kind", "reason", "at")[:limit]
    )
    return {
        "total": suspended.count(),
        "rows": [
            {
                "id": r["id"],
                "owner": r["owner__username"],
                "kind": r["kind"],
                "reason": r["reason"],
                "at": r["at"],
            }
            for r in rows
        ],
    }


def pattern_instances(*, limit: int = PATTERNS_SHOWN) -> dict[str, Any]:
    """Partial-match instances of active form 3 subscriptions, read from their stored
    evaluators: ``rows`` of ``id``, ``owner``, ``instances`` (instances waiting at a step,
    what ``state_limit`` counts) and ``state_bytes``, for the ``limit`` with the largest
    stored state (the instances live in it, so these are the ones to look at); ``total``
    counts every active pattern.

    Reading the stored state costs one unpickling per row shown and nothing on the advance
    path, where a kept counter would cost a write per step; a state that cannot be read
    shows ``instances`` None rather than failing the page."""
    active = Subscription.objects.filter(
        kind=Subscription.Kind.PATTERN, state=Subscription.State.ACTIVE
    )
    ranked = (
        active.annotate(state_bytes=Length("evaluator"))
        .order_by("-state_bytes", "id")
        .values_list("id", "owner__username", "state_bytes", "evaluator")[:limit]
    )
    rows = []
    for sub_id, owner, state_bytes, raw in ranked:
        instances = None
        try:
            assert raw is not None  # an active row has its state (a check constraint)
            instances = snapshot_load(bytes(raw)).engine.kept_events
        except Exception:  # one unreadable state must not hide the others
            log.warning("the stored state of subscription %s is unreadable", sub_id, exc_info=True)
        rows.append(
            {"id": sub_id, "owner": owner, "instances": instances, "state_bytes": state_bytes}
        )
    return {"total": active.count(), "rows": rows}
