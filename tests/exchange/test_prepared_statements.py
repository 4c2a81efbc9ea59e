"""Statements prepared on the server (``DATABASE_PREPARED_STATEMENTS``, on by default,
exchange/settings/base.py): PostgreSQL binds the parameters of Django's cursors, so that a
statement run often is prepared on its connection, and every statement is still seen by
query capture, with its values, as Django logs it."""

from __future__ import annotations

import pytest
from django.db import DataError, connection
from django.test.utils import CaptureQueriesContext

from exchange.models import Bid
from exchange.services.orders import bid_place
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db


def prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_a_statement_is_prepared_after_the_threshold_and_captured_every_time():
    statement = "SELECT %s::integer + 1, %s::text"
    threshold = connection.connection.prepare_threshold
    assert threshold == 5  # the settings' value
    with CaptureQueriesContext(connection) as captured:
        for i in range(threshold + 1):
            with connection.cursor() as cursor:
                cursor.execute(statement, [i, "x"])
                assert cursor.fetchone() == (i + 1, "x")
    assert len(captured) == threshold + 1
    # logged with its values, as Django's own cursor logs a statement
    assert [q["sql"] for q in captured] == [
        f"SELECT {i}::integer + 1, 'x'::text" for i in range(threshold + 1)
    ]
    assert [s for s in prepared() if "::integer + 1" in s] == ["SELECT $1::integer + 1, $2::text"]


def test_a_bids_insert_is_prepared_on_its_connection():
    market, buyer = pencils_market(), UserFactory()
    for lot in range(1, 8):
        bid_place(buyer=buyer, market=market, constraint=f"lot = {lot} AND price <= 1.00")
    assert Bid.objects.filter(buyer=buyer).count() == 7
    inserts = [s for s in prepared() if s.startswith("WITH room AS")]
    assert len(inserts) == 1 and "$1" in inserts[0]


def test_a_database_error_is_djangos():
    with pytest.raises(DataError), connection.cursor() as cursor:
        cursor.execute("SELECT %s::integer", ["not a number"])
