"""A matching cycle runs its prepared statements with their generic plans
(``partition_lock``), and the one read whose generic plan needed help, the best-offer changes
past the log's mark, reads them in pages that add up to the whole (``events``)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.utils import timezone

from exchange.models import BestOfferChange
from exchange.services import events
from exchange.services.matching import partition_lock
from exchange.services.orders import offer_publish
from tests.factories import UserFactory, pencils_market


def plan_cache_mode() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_the_cycle_transaction_alone_runs_generic_plans():
    assert plan_cache_mode() == "auto"
    with transaction.atomic():
        assert partition_lock(0, 1) == []
        assert plan_cache_mode() == "force_generic_plan"
    assert plan_cache_mode() == "auto"


@pytest.mark.django_db
def test_the_best_offer_changes_read_in_pages_are_the_whole(monkeypatch):
    market = pencils_market()
    seller = UserFactory()
    offers = [
        offer_publish(seller=seller, market=market, constraint=f"lot = {i} AND price >= 1.00")
        for i in range(1, 4)
    ]
    now = timezone.now()
    for n in range(7):
        BestOfferChange.objects.create(
            offer=offers[n % 3], value=Decimal(n), matching_bids=n, at=now
        )
    whole = events._best_changes_after(0)
    assert [row[0] for row in whole] == sorted(BestOfferChange.objects.values_list("id", flat=True))
    assert [(row[2], row[3], row[4]) for row in whole] == [
        (Decimal(n), n, "office.supplies.pencils") for n in range(7)
    ]
    mark = whole[2][0]
    for page in (1, 2, 3, 7, 8):
        monkeypatch.setattr(events, "BEST_CHANGES_PAGE", page)
        assert events._best_changes_after(0) == whole, page
        assert events._best_changes_after(mark) == whole[3:], page
        assert events._best_changes_after(whole[-1][0]) == [], page
