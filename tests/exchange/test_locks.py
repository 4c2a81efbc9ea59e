"""The row locks that keep concurrent writers apart are really taken, and only on the rows
they need (FOR NO KEY UPDATE OF the order itself: foreign-key checks of other transactions
and the market row stay free, which is what the concurrency test needs to be deadlock-free)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from exchange.services.closing import offer_close
from exchange.services.orders import bid_amend, bid_place, offer_amend, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("strategy")]


def locks(queries) -> list[str]:
    return [q["sql"][q["sql"].index(" FOR ") :] for q in queries if " FOR " in q["sql"]]


def test_amending_locks_only_the_order_row_and_a_bids_buyer():
    market = pencils_market()
    seller, buyer = UserFactory(), UserFactory()
    offer = offer_publish(seller=seller, market=market, constraint="lot = 1 AND price >= 1.00")
    bid = bid_place(buyer=buyer, market=market, constraint="lot <= 5 AND price <= 1.10")
    with CaptureQueriesContext(connection) as offer_q:
        offer_amend(
            seller=seller, offer_id=offer.pk, constraint="lot = 2 AND price >= 1.00", version=1
        )
    with CaptureQueriesContext(connection) as bid_q:
        bid_amend(buyer=buyer, bid_id=bid.pk, constraint="lot <= 5 AND price <= 1.20", version=1)
    assert locks(offer_q.captured_queries) == [' FOR NO KEY UPDATE OF "exchange_offer"']
    # a bid's buyer row too, after the bid, in a function that then reads its spending
    # limit and commitments by a statement of its own, under that lock and after it was
    # granted (migration 0027; tests/exchange/test_limit_race.py proves the order matters)
    assert locks(bid_q.captured_queries) == [' FOR NO KEY UPDATE OF "exchange_bid"']
    sqls = [q["sql"] for q in bid_q.captured_queries]
    at = next(
        i for i, sql in enumerate(sqls) if sql.endswith(' FOR NO KEY UPDATE OF "exchange_bid"')
    )
    assert sqls[at + 1] == (
        f"SELECT amount, committed FROM exchange_buyer_room({buyer.pk}, {bid.pk})"
    )


def test_closing_takes_the_cycle_lock_then_the_offer_then_the_winning_bid():
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(), market=market, constraint="lot = 1 AND price >= 1.00"
    )
    bid_place(buyer=UserFactory(), market=market, constraint="price <= 1.10")
    with CaptureQueriesContext(connection) as q:
        offer_close(offer_id=offer.pk, staff=StaffFactory())
    sql = [x["sql"] for x in q.captured_queries]
    advisory = next(i for i, s in enumerate(sql) if "pg_advisory_xact_lock" in s)
    offer_lock = next(i for i, s in enumerate(sql) if 'FOR NO KEY UPDATE OF "exchange_offer"' in s)
    bid_lock = next(
        i
        for i, s in enumerate(sql)
        if s.startswith('SELECT "exchange_bid"') and "FOR NO KEY UPDATE" in s
    )
    assert advisory < offer_lock < bid_lock
