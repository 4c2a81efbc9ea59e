"""The log is partitioned by day (SPEC 8.1): rows land in their day's partition, a read that
names one day touches that partition only, and beat creates partitions ahead of time."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.utils import timezone

from exchange.event_tasks import event_partitions
from exchange.models import Event
from exchange.selectors.events import events_visible
from exchange.services.event_partitions import DAYS_AHEAD, event_partitions_ensure, partition_name
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import offer_publish
from exchange.settings.base import CELERY_BEAT_SCHEDULE
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db

DAY = dt.date(2030, 1, 1)


def partitions() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'exchange_event'::regclass"
        )
        return {row[0] for row in cursor.fetchall()}


def where(seq: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text FROM exchange_event WHERE seq = %s", [seq])
        return cursor.fetchone()[0]


def insert(seq: int, time: dt.datetime) -> None:
    Event.objects.create(
        seq=seq, time=time, type="offer_withdrawn", subject="a.b", data={"offer": seq}
    )


def test_an_event_lands_in_its_days_partition():
    # Given the partitions the migration made (today and the days ahead)
    today = timezone.now().astimezone(dt.UTC).date()
    assert {
        partition_name(today + dt.timedelta(days=d)) for d in range(DAYS_AHEAD + 1)
    } <= partitions()
    # When the cycle writes an event
    offer_publish(
        seller=UserFactory(), market=pencils_market(), constraint="lot = 1 AND price >= 1"
    )
    matching_cycle_run()
    # Then it is in today's partition (the UTC day of its time)
    event = Event.objects.get()
    assert where(event.seq) == partition_name(event.time.astimezone(dt.UTC).date())


def test_a_one_day_read_prunes_the_other_partitions():
    # Given three consecutive days with their partitions
    assert event_partitions_ensure(first=DAY, days=3) == [
        "exchange_event_p20300101",
        "exchange_event_p20300102",
        "exchange_event_p20300103",
    ]
    # When a read names the middle day
    since = dt.datetime(2030, 1, 2, tzinfo=dt.UTC)
    plan = events_visible(
        user=AnonymousUser(), since=since, until=since + dt.timedelta(days=1)
    ).explain()
    # Then PostgreSQL scans that day's partition and no other
    scanned = {name for name in partitions() if name in plan}
    assert scanned == {"exchange_event_p20300102"}, plan


def test_ensuring_twice_creates_nothing_more():
    assert len(event_partitions_ensure(first=DAY, days=2)) == 2
    before = partitions()
    assert event_partitions_ensure(first=DAY, days=2) == []
    assert partitions() == before


def test_rows_of_a_day_without_partition_wait_in_the_default_one_and_move_later():
    # Given an event of a day no partition covers yet: it lands in the default partition
    late = dt.datetime(2031, 6, 1, 8, 30, tzinfo=dt.UTC)
    insert(1, late)
    insert(2, late + dt.timedelta(days=1))
    assert (where(1), where(2)) == ("exchange_event_default", "exchange_event_default")
    # When beat creates that day's partition
    assert event_partitions_ensure(first=late.date(), days=1) == ["exchange_event_p20310601"]
    # Then the row moved into it, unchanged, and the next day's row stayed where it was
    assert (where(1), where(2)) == ("exchange_event_p20310601", "exchange_event_default")
    moved = Event.objects.get(seq=1)
    assert (moved.time, moved.type, moved.data) == (late, "offer_withdrawn", {"offer": 1})


def test_beat_creates_the_partitions_ahead():
    entry = CELERY_BEAT_SCHEDULE["event-partitions"]
    assert entry["task"] == "exchange.event_partitions"

    with connection.cursor() as cursor:
        cursor.execute(
            f'DROP TABLE "{partition_name(timezone.now().astimezone(dt.UTC).date() + dt.timedelta(days=DAYS_AHEAD))}"'
        )
    assert event_partitions() == 1


def analyzed_columns(table: str) -> set[str]:
    """The columns ANALYZE of ``table`` leaves statistics for."""
    with connection.cursor() as cursor:
        cursor.execute(f'ANALYZE "{table}"')
        cursor.execute("SELECT attname FROM pg_stats WHERE tablename = %s", [table])
        return {row[0] for row in cursor.fetchall()}


def test_a_new_partition_keeps_no_statistics_of_the_payload_as_the_others_do():
    # Given a day's partition made after the migrations, holding events
    made = event_partitions_ensure(first=DAY, days=1)
    assert made == [partition_name(DAY)]
    for seq in range(1, 21):
        insert(seq, dt.datetime(2030, 1, 1, 9, seq, tzinfo=dt.UTC))
    # When PostgreSQL analyzes it, as autovacuum does
    columns = analyzed_columns(partition_name(DAY))
    # Then the columns reads filter on have statistics and the payload has none (migration
    # 0030 set its target on the parent; CREATE TABLE ... LIKE does not copy it)
    assert {"seq", "time", "type", "subject", "owner_id"} <= columns
    assert "data" not in columns
