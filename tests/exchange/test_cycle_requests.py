"""Changes ask for a matching cycle of their market's partition after commit; while one is
queued and not started, more changes of that partition do not queue another (that cycle
takes them), and a started cycle lets the next change queue again. Each partition's cycles
go to its own queue and take only its markets' changes (SPEC 9, "Scale-out")."""

from __future__ import annotations

import base64
import json

import psycopg
import pytest
from django.conf import settings
from django.db import connection, transaction

from exchange.models import OrderChange
from exchange.redis_clients import redis_client
from exchange.services.matching import MARKET_LOCK, matching_cycle_run
from exchange.services.orders import bid_place
from exchange.tasks import _pending_key, matching_cycle, matching_queue
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db(transaction=True)


def keys_clear() -> None:
    """No cycle pending or queued in any partition."""
    for partition in range(settings.MATCHING_PARTITIONS):
        redis_client().delete(
            _pending_key(partition, settings.MATCHING_PARTITIONS), matching_queue(partition)
        )


def queued(partition: int) -> list[tuple[str, list[int]]]:
    """The tasks waiting on ``partition``'s queue, oldest first: each one's name and
    arguments, read from Celery's message."""
    out = []
    for raw in reversed(redis_client().lrange(matching_queue(partition), 0, -1)):
        message = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        out.append((message["headers"]["task"], args))
    return out


@pytest.fixture
def two_markets(settings):
    """Two markets in different partitions (the test settings have two), whose cycles are
    queued where no worker takes them: the session's live stack, once a stack test started
    it, runs a matching worker on the usual queues, which would take the tasks these tests
    read (and run their cycles)."""
    assert settings.MATCHING_PARTITIONS == 2
    settings.MATCHING_QUEUE = f"{settings.MATCHING_QUEUE}.cycle-requests"
    first = pencils_market(subject="office.supplies.pencils")
    second = pencils_market(subject="office.supplies.pens")
    assert first.pk % 2 != second.pk % 2
    keys_clear()
    yield first, second
    keys_clear()


def test_queued_cycle_takes_later_changes_and_a_started_one_lets_them_queue_again(two_markets):
    market = two_markets[0]
    partition, count = market.pk % 2, 2
    buyer = UserFactory()
    bid_place(buyer=buyer, market=market, constraint="lot = 5 AND price <= 1.00")
    bid_place(buyer=buyer, market=market, constraint="lot = 6 AND price <= 1.00")
    assert queued(partition) == [("exchange.matching_cycle", [partition, count])]
    assert queued(1 - partition) == []
    # it cannot block cycles forever
    assert redis_client().ttl(_pending_key(partition, count)) > 0
    # The queued cycle starts: it takes both changes.
    assert matching_cycle.run(partition, count) == 2
    assert not OrderChange.objects.filter(processed_at=None).exists()
    bid_place(buyer=buyer, market=market, constraint="lot = 7 AND price <= 1.00")
    assert len(queued(partition)) == 2


def test_each_partition_queues_its_own_cycle_and_takes_only_its_markets_changes(two_markets):
    first, second = two_markets
    buyer = UserFactory()
    a = bid_place(buyer=buyer, market=first, constraint="lot = 5 AND price <= 1.00")
    b = bid_place(buyer=buyer, market=second, constraint="lot = 5 AND price <= 1.00")
    # one task per partition, each on its partition's queue
    for market in (first, second):
        assert queued(market.pk % 2) == [("exchange.matching_cycle", [market.pk % 2, 2])]
    # The first market's partition takes its change and leaves the other's pending.
    assert matching_cycle.run(first.pk % 2, 2) == 1
    pending = OrderChange.objects.filter(processed_at=None)
    assert list(pending.values_list("order_id", flat=True)) == [b.pk]
    assert not OrderChange.objects.filter(order_id=a.pk, processed_at=None).exists()
    assert matching_cycle.run(second.pk % 2, 2) == 1
    assert not pending.exists()


def test_a_market_whose_cycle_runs_elsewhere_is_waited_for_and_others_are_not(two_markets):
    # Another session holds the first market's lock, as a cycle of it running elsewhere does:
    # a cycle of the other partition runs at once; one of the first market's partition
    # waits (here: gives up at the lock timeout) rather than overlap it.
    first, second = two_markets
    buyer = UserFactory()
    bid_place(buyer=buyer, market=first, constraint="lot = 5 AND price <= 1.00")
    bid_place(buyer=buyer, market=second, constraint="lot = 5 AND price <= 1.00")
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", [MARKET_LOCK, first.pk])
        report = matching_cycle_run(partition=second.pk % 2, partitions=2)
        assert report.changes == 1
        with pytest.raises(Exception, match="lock timeout"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '200ms'")
            matching_cycle_run(partition=first.pk % 2, partitions=2)
        assert OrderChange.objects.filter(processed_at=None).count() == 1
    assert matching_cycle_run(partition=first.pk % 2, partitions=2).changes == 1
