"""The engine's read of its partitions' rows (``Engine._rescan``, one partition a step in turn)
goes by the index ``subscription_partition`` on ``id % N`` (migration 0024, issue 35), and
answers the active and paused rows of the partitions asked for, no others."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection

from exchange.services.subscriptions import (
    subscription_create,
    subscription_delete,
    subscription_pause,
)
from exchange.subscription_engine.engine import rescan_sql
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

COUNT = settings.SUBSCRIPTION_ENGINE_PARTITIONS


def plan(sql: str, params: list[object]) -> list[str]:
    """``sql``'s plan, ``exchange_subscription`` analyzed first and sequential and bitmap
    scans priced out (``enable_indexscan`` stays on: it prices index-only scans out too):
    the cheapest index path is left."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE exchange_subscription")
        for setting in ("enable_seqscan", "enable_bitmapscan"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("EXPLAIN (COSTS off) " + sql, params)
        return [row[0].strip() for row in cursor.fetchall()]


def test_a_partitions_rows_are_read_by_the_partition_index():
    owner = UserFactory()
    for _ in range(3):
        subscription_create(owner=owner, query="SELECT price")

    scan, *conditions = plan(rescan_sql(COUNT), [[3]])

    # the index's expression is the statement's: a condition of the scan, not a filter
    # after it (a partial index on another expression is read whole, its rows filtered)
    assert scan in (
        "Index Scan using subscription_partition on exchange_subscription",
        "Index Only Scan using subscription_partition on exchange_subscription",
    )
    assert conditions == [f"Index Cond: ((id % '{COUNT}'::bigint) = ANY ('{{3}}'::bigint[]))"]


def test_the_read_answers_the_active_and_paused_rows_of_the_partitions_asked_for():
    owner = UserFactory()
    subs = [subscription_create(owner=owner, query="SELECT price") for _ in range(2 * COUNT)]
    paused, deleted = subs[0], subs[1]
    subscription_pause(owner=owner, subscription_id=paused.pk)
    subscription_delete(owner=owner, subscription_id=deleted.pk)
    asked = [paused.pk % COUNT, deleted.pk % COUNT, (subs[5].pk + 1) % COUNT]

    with connection.cursor() as cursor:
        cursor.execute(rescan_sql(COUNT), [asked])
        answer = dict(cursor.fetchall())

    expected = {s.pk: "active" for s in subs if s.pk % COUNT in asked and s is not deleted}
    expected[paused.pk] = "paused"
    assert answer == expected
    assert len(answer) == 2 * len(set(asked)) - 1  # two a partition, but the deleted one
