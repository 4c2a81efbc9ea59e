"""A ref counts once per user, market and side, even when two imports of it race."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import connection, connections

from exchange.adapters.feeds import Row
from exchange.adapters.imports import RowResult, feed_import
from exchange.adapters.maps import map_default
from exchange.models import ImportRef, Offer, OrderChange
from exchange.selectors.markets import market_schema
from exchange.services.orders import offer_publish


def _other_connection() -> psycopg.Connection:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params)


def _lock_waiters(conn: psycopg.Connection) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query ILIKE '%%exchange_importref%%'"
    ).fetchone()
    assert row is not None
    return row[0]


@pytest.mark.django_db(transaction=True)
def test_two_imports_of_one_ref_at_once_make_one_order(pencils, seller):
    """The other import's row holds the ref, uncommitted, while this one runs: this import
    places its offer, waits on the ref's unique index, and once the other commits rolls its
    offer back and reports the other's."""
    theirs = offer_publish(seller=seller, market=pencils, constraint="lot = 5 AND price = 1.00")
    changes = OrderChange.objects.count()
    other, watcher = _other_connection(), _other_connection()
    watcher.autocommit = True
    other.execute(
        "INSERT INTO exchange_importref (user_id, market_id, side, ref, offer_id, created_at) "
        "VALUES (%s, %s, 'offer', 'R1', %s, now())",
        [seller.pk, pencils.pk, theirs.pk],
    )
    results: list[RowResult] = []

    def run() -> None:
        try:
            results.extend(
                feed_import(
                    user=seller,
                    market=pencils,
                    side="offer",
                    rows=[Row(2, {"ref": "R1", "lot": "7", "price": "1.00"})],
                    feed_map=map_default(market_schema(market=pencils)),
                )
            )
        finally:
            connections.close_all()

    importer = threading.Thread(target=run)
    importer.start()
    try:
        while _lock_waiters(watcher) == 0 and importer.is_alive():
            threading.Event().wait(0.05)
        assert importer.is_alive(), "the import finished without waiting on the ref"
        other.commit()
        importer.join()
    finally:
        other.close()
        watcher.close()
    assert results == [RowResult(2, "existing", theirs.pk, "R1")]
    assert list(Offer.objects.values_list("pk", flat=True)) == [theirs.pk]
    assert OrderChange.objects.count() == changes
    assert ImportRef.objects.count() == 1
