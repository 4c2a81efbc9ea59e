"""The event log's daily partitions (SPEC 8.1): created ahead of time by Celery beat.

Each UTC day has its partition ``exchange_event_pYYYYMMDD``, so a read that names its time
range touches only the days in it. A default partition takes any event whose day has no
partition yet (beat late, or the clock jumped), so the writer never fails for want of one;
``event_partitions_ensure`` then moves those rows into the day's new partition.
"""

from __future__ import annotations

import datetime as dt

from django.db import connection, transaction
from django.utils import timezone

from exchange.models.events import EVENT_TABLE
from exchange.services.matching import cycle_lock

DEFAULT_PARTITION = f"{EVENT_TABLE}_default"
# How many days past today beat keeps partitions ready for.
DAYS_AHEAD = 7


def partition_name(day: dt.date) -> str:
    return f"{EVENT_TABLE}_p{day:%Y%m%d}"


def _bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime]:
    start = dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)
    return start, start + dt.timedelta(days=1)


def event_partitions_ensure(
    *, first: dt.date | None = None, days: int = DAYS_AHEAD + 1
) -> list[str]:
    """Make sure the ``days`` days from ``first`` (default: today, UTC) have their
    partitions; returns the names of those it created. Safe to run twice.

    Runs under the cycle lock, so no event is written while rows move out of the default
    partition.
    """
    first = first or timezone.now().astimezone(dt.UTC).date()
    created = []
    with transaction.atomic():
        cycle_lock()
        with connection.cursor() as cursor:
            for offset in range(days):
                day = first + dt.timedelta(days=offset)
                name = partition_name(day)
                cursor.execute("SELECT to_regclass(%s)", [name])
                if cursor.fetchone()[0] is not None:
                    continue
                start, end = _bounds(day)
                # A new partition may not take rows that the default one holds, so those
                # rows move: into a plain table first, which is then attached.
                cursor.execute(
                    f'CREATE TABLE "{name}" (LIKE {EVENT_TABLE} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'
                )
                _statistics_copy(cursor, name)
                cursor.execute(
                    f'WITH moved AS (DELETE FROM "{DEFAULT_PARTITION}" WHERE time >= %s AND time < %s '
                    f'RETURNING *) INSERT INTO "{name}" SELECT * FROM moved',
                    [start, end],
                )
                # DDL takes no parameters; the bounds are dates this function made.
                cursor.execute(
                    f'ALTER TABLE {EVENT_TABLE} ATTACH PARTITION "{name}" '
                    f"FOR VALUES FROM ('{start.isoformat()}') TO ('{end.isoformat()}')"
                )
                created.append(name)
    return created


def _statistics_copy(cursor, name: str) -> None:
    """Give the new table ``name`` the statistics targets set on the log's columns
    (migration 0030: none for ``data``): ``LIKE`` does not copy them, and ANALYZE reads a
    partition's own."""
    cursor.execute(
        "SELECT attname, attstattarget FROM pg_attribute WHERE attrelid = %s::regclass"
        " AND attnum > 0 AND NOT attisdropped AND attstattarget >= 0",
        [EVENT_TABLE],
    )
    for column, target in cursor.fetchall():
        # DDL takes no parameters: the column's name comes from the catalog, quoted.
        cursor.execute(f'ALTER TABLE "{name}" ALTER COLUMN "{column}" SET STATISTICS {int(target)}')
