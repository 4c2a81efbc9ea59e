"""A buyer's commitment (``buyer_room``, on every bid placed or amended) is one row of
``BuyerCommitment`` (migration 0026), read by its key: no active bid of the buyer is
visited, and an amendment reads the one bid it amends. The partial index
``bid_buyer_active_award`` and the frequent vacuum of ``exchange_bid`` (migration 0022)
stay for the reads by market of the amend page (``selectors/ui/amend.py``)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.db import connection

from exchange.selectors.limits import _ROOM_SQL, buyer_committed
from exchange.services.orders import bid_place, bid_withdraw
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db


def exchange_bid_lines(sql: str, params: list[object]) -> list[str]:
    """The lines of ``sql``'s plan that read ``exchange_bid``, with the sequential and bitmap
    scans priced out: what is left is the cheapest index path, an index-only scan when an
    index holds the statement's columns.

    The table is analyzed first, so that the plan does not depend on the statistics other
    tests left behind. ``enable_indexscan`` stays on: it prices index-only scans out as well,
    and a table analyzed at one page then reads cheaper by a sequential scan (both paths
    carrying the same penalty), which is how this test once failed on CI."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE exchange_bid")
        for setting in ("enable_seqscan", "enable_bitmapscan"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("EXPLAIN (COSTS off) " + sql, params)
        return [row[0].strip() for row in cursor.fetchall() if "exchange_bid" in row[0]]


def plan_lines(sql: str, params: list[object]) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (COSTS off) " + sql, params)
        return [row[0].strip() for row in cursor.fetchall()]


@pytest.mark.parametrize("other_than", [False, True])
def test_the_limit_check_reads_one_commitment_row_and_no_bid_but_the_amended(other_than):
    market, buyer = pencils_market(), UserFactory()
    bid = bid_place(buyer=buyer, market=market, constraint="lot <= 10 AND price <= 1.00")
    for i in range(30):
        bid_place(buyer=buyer, market=market, constraint=f"lot <= {i + 1} AND price <= 1.00")
    params: list[object] = [bid.pk, "active", buyer.pk] if other_than else [buyer.pk]

    lines = exchange_bid_lines(_ROOM_SQL[other_than], params)
    plan = plan_lines(_ROOM_SQL[other_than], params)

    read = "->  Index Scan using exchange_bid_pkey on exchange_bid u0_2"
    assert lines == ([read] if other_than else []), plan
    if other_than:  # the amended bid alone, by its key (a literal, or a typed parameter)
        cond = re.fullmatch(
            r"Index Cond: \(id = (?:'(\d+)'::(?:smallint|integer|bigint)|(\d+))\)",
            plan[plan.index(read) + 1],
        )
        assert cond is not None and int(cond[1] or cond[2]) == bid.pk, plan
    assert (
        "->  Index Scan using exchange_buyercommitment_pkey on exchange_buyercommitment u0_1"
        in plan
    )


def test_the_index_counts_active_bids_only():
    market, buyer, other = pencils_market(), UserFactory(), UserFactory()
    bid_place(buyer=buyer, market=market, constraint="lot <= 10 AND price <= 1.00")
    kept = bid_place(buyer=buyer, market=market, constraint="lot <= 20 AND price <= 2.00")
    gone = bid_place(buyer=buyer, market=market, constraint="lot <= 500 AND price <= 1.00")
    bid_withdraw(buyer=buyer, bid_id=gone.pk)
    bid_place(buyer=other, market=market, constraint="lot <= 7 AND price <= 1.00")

    assert buyer_committed(buyer_id=buyer.pk) == Decimal("50.00")
    assert buyer_committed(buyer_id=buyer.pk, other_than=kept.pk) == Decimal("10.00")
    assert buyer_committed(buyer_id=other.pk) == Decimal("7.00")


def test_exchange_bid_is_vacuumed_after_a_hundredth_of_its_rows_inserted():
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE oid = 'exchange_bid'::regclass")
        (options,) = cursor.fetchone()

    assert sorted(options) == [
        "autovacuum_vacuum_insert_scale_factor=0.01",
        "autovacuum_vacuum_scale_factor=0.02",
    ]
