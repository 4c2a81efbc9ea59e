"""Changes ask for a matching cycle after commit; while one is queued and not started, more
changes do not queue another (that cycle takes them), and a started cycle lets the next
change queue again."""

from __future__ import annotations

from unittest import mock

import pytest
from django.conf import settings

from exchange.models import OrderChange
from exchange.redis_clients import redis_client
from exchange.services.orders import bid_place
from exchange.tasks import matching_cycle
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db(transaction=True)


def test_queued_cycle_takes_later_changes_and_a_started_one_lets_them_queue_again():
    redis_client().delete(settings.CYCLE_PENDING_KEY)
    market = pencils_market()
    buyer = UserFactory()
    with mock.patch.object(matching_cycle, "delay") as delay:
        bid_place(buyer=buyer, market=market, constraint="lot = 5 AND price <= 1.00")
        bid_place(buyer=buyer, market=market, constraint="lot = 6 AND price <= 1.00")
        assert delay.call_count == 1
        assert redis_client().ttl(settings.CYCLE_PENDING_KEY) > 0  # it cannot block cycles forever
        # The queued cycle starts: it takes both changes.
        assert matching_cycle.run() == 2
        assert not OrderChange.objects.filter(processed_at=None).exists()
        bid_place(buyer=buyer, market=market, constraint="lot = 7 AND price <= 1.00")
        assert delay.call_count == 2
    redis_client().delete(settings.CYCLE_PENDING_KEY)
