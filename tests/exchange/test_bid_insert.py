"""A bid and its ``OrderChange`` are written by one statement (``_bid_insert``, issue 36),
with its buyer's lock and limit check: the rows hold what the ORM's two inserts wrote, a
refused bid writes neither, and outside a caller's transaction the statement is the whole
placement (committed when ``bid_place`` returns)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

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
    (statement,) = [q["sql"] for q in queries.captured_queries if "INSERT" in q["sql"]]
    assert statement.startswith("WITH room AS (SELECT amount, committed FROM exchange_buyer_room(")
    assert not any(" FOR " in q["sql"] for q in queries.captured_queries)  # the function locks
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


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_statement_is_the_placement():
    market, buyer = pencils_market(), UserFactory()
    with CaptureQueriesContext(connection) as queries:
        bid = bid_place(buyer=buyer, market=market, constraint="lot = 101 AND price <= 1.60")
    assert not connection.in_atomic_block
    assert [q["sql"][:15] for q in queries.captured_queries] == ["WITH room AS (S"]

    # committed: another session (a thread's connection) sees the bid, its change and its
    # buyer's commitment
    def seen() -> tuple:
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT b.largest_award, c.committed, (SELECT count(*) FROM "
                    "exchange_orderchange WHERE order_id = b.id AND side = 'bid') FROM "
                    "exchange_bid b JOIN exchange_buyercommitment c ON c.buyer_id = b.buyer_id "
                    "WHERE b.id = %s",
                    [bid.pk],
                )
                return cursor.fetchone()
        finally:
            connection.close()

    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(seen).result() == (Decimal("161.60"), Decimal("161.60"), 1)


def test_an_award_past_what_the_columns_hold_is_refused_as_over_the_limit():
    # a lot of 10 at 10^21: more than a limit or an award can hold, so the insert would fail on the
    # value before its check could refuse it; it is refused as any bid past the limit is.
    market, buyer = pencils_market(), UserFactory()
    before = (Bid.objects.count(), OrderChange.objects.count())
    with pytest.raises(InvalidInput) as caught:
        bid_place(buyer=buyer, market=market, constraint=f"lot = 10 AND price <= {10**21}")
    assert caught.value.as_dict()["code"] == "over_limit"
    assert (Bid.objects.count(), OrderChange.objects.count()) == before
