"""Migration 0030: the columns that only carry payloads have no planner statistics, so an
ANALYZE (autovacuum's, under load) does not spend its CPU on their JSON; the columns
queries filter and join on keep theirs. And the cluster analyzes at PostgreSQL's own
statistics target (``ops/services``)."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from exchange.services.orders import bid_place, offer_publish
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db

COLUMNS = importlib.import_module(
    "exchange.migrations.0030_payload_columns_without_statistics"
).COLUMNS


def targets() -> dict[tuple[str, str], int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, a.attname, a.attstattarget FROM pg_attribute a"
            " JOIN pg_class c ON c.oid = a.attrelid"
            " WHERE c.relname = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped",
            [list(COLUMNS)],
        )
        return {(table, column): target for table, column, target in cursor.fetchall()}


def test_every_payload_column_has_no_target_and_every_other_column_the_default():
    found = targets()
    payload = {(table, column) for table, columns in COLUMNS.items() for column in columns}
    assert payload <= set(found)
    assert {key: found[key] for key in payload} == dict.fromkeys(payload, 0)
    # The default is stored as -1 before PostgreSQL 17 and as NULL from 17 on.
    assert {key: t for key, t in found.items() if key not in payload and t not in (-1, None)} == {}


def test_analyze_of_the_bids_skips_their_constraints_and_keeps_the_keys():
    market = pencils_market()
    offer_publish(seller=UserFactory(), market=market, constraint="lot = 1 AND price >= 1")
    for _ in range(5):
        bid_place(buyer=UserFactory(), market=market, constraint="lot = 1 AND price <= 2")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE exchange_bid")
        cursor.execute("SELECT attname FROM pg_stats WHERE tablename = 'exchange_bid'")
        columns = {row[0] for row in cursor.fetchall()}
    assert {"id", "buyer_id", "market_id", "state"} <= columns
    assert columns.isdisjoint({"constraint_json", "constraint_text"})


def test_the_cluster_analyzes_at_postgresqls_own_statistics_target():
    # ops/services: 1000 made every ANALYZE sample 300,000 rows a table, and autovacuum's
    # took most of a core for seconds under load (docs/benchmarks.md, *Autovacuum's share*).
    with connection.cursor() as cursor:
        cursor.execute("SHOW default_statistics_target")
        assert cursor.fetchone()[0] == "100"
