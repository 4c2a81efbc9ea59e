"""A store on Django's own connection, as the exchange uses it: inside ``atomic`` blocks."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

import matching
from matching.store import open_store


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("strategy", ["paper", "range"])
def test_a_store_on_djangos_connection_follows_its_transactions(strategy: str) -> None:
    connection.ensure_connection()
    store = open_store(connection.connection, strategy=strategy, namespace=f"test_dj_{strategy}")
    store.drop()
    store.create()
    try:
        # Given a match made inside an atomic block that then fails
        with pytest.raises(RuntimeError), transaction.atomic():
            store.add_publications([(1, matching.parse("x = 1 OR y = 2"))])
            store.add_subscriptions([(2, matching.parse("y < 5"))])
            assert store.match_disjuncts("publications", [1]) == {(1, 1, 2, 0)}
            raise RuntimeError("roll back")
        # Then nothing of it remains
        assert store.match_all() == set()

        # And in a block that commits, everything does
        with transaction.atomic():
            store.add_publications([(1, matching.parse("x = 1 OR y = 2"))])
            store.add_subscriptions([(2, matching.parse("y < 5"))])
        assert store.match_subscriptions([2]) == {(1, 2)}
    finally:
        store.drop()
