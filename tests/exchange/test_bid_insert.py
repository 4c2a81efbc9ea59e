"""A bid and its ``OrderChange`` are written by one statement (``_bid_insert``, issue 36):
the rows hold what the ORM's two inserts wrote, and a refused bid writes neither."""

from __future__ import annotations

import pytest
from django.db import connection
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext

from exchange.errors import InvalidInput
from exchange.market_rules import OrderConstraint
from exchange.models import Bid, OrderChange, SpendingLimit
from exchange.selectors.markets import constraint_check
from exchange.services.events import order_event
from exchange.services.orders import bid_place
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db


def test_the_rows_are_those_the_orm_wrote(django_capture_on_commit_callbacks):
    market, buyer = pencils_market(), UserFactory()
    text = "lot = 101 AND price <= 1.60"
    changes = OrderChange.objects.count()
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks() as callbacks,
    ):
        bid = bid_place(buyer=buyer, market=market, constraint=text)
    assert sum("INSERT" in q["sql"] for q in queries.captured_queries) == 1
    assert len(callbacks) == 1  # the matching cycle's request, after commit
    stored = Bid.objects.get(pk=bid.pk)
    assert model_to_dict(stored) == model_to_dict(bid)
    assert (stored.created_at, stored.updated_at) == (bid.created_at, bid.updated_at)
    assert (stored.state, stored.version, stored.set_aside_at) == (Bid.State.ACTIVE, 1, None)
    assert stored.constraint_text == text and stored.buyer_id == buyer.pk
    assert stored.largest_award == bid.largest_award is not None
    assert not bid._state.adding
    (change,) = OrderChange.objects.order_by("-id")[:1]
    assert OrderChange.objects.count() == changes + 1
    rules: OrderConstraint = constraint_check(market=market, side="bid", source=text)
    expected = order_event("bid_placed", stored, rules.constraint)
    assert (change.side, change.order_id, change.processed_at) == ("bid", bid.pk, None)
    assert change.event == expected.event and change.event["bid"] == bid.pk
    assert change.event_owner_id == buyer.pk == expected.owner_id


def test_a_refused_bid_writes_nothing():
    market, buyer = pencils_market(), UserFactory()
    SpendingLimit.objects.create(user=buyer, amount=1)
    before = (Bid.objects.count(), OrderChange.objects.count())
    with pytest.raises(InvalidInput):
        bid_place(buyer=buyer, market=market, constraint="lot = 101 AND price <= 1.60")
    assert (Bid.objects.count(), OrderChange.objects.count()) == before
