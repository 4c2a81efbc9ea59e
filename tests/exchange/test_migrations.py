"""A database with live orders upgrades through the set-aside columns and the store rebuild."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from exchange.models import BestOffer, Bid, Offer, OfferBidMatch
from tests.factories import PENCILS_SCHEMA

BEFORE = [("exchange", "0004_marketday")]
AFTER = [("exchange", "0008_engine_rebuild")]


@pytest.mark.django_db(transaction=True)
def test_live_orders_survive_the_upgrade_and_are_matched_by_the_rebuild(settings):
    settings.MATCHING_STRATEGY = "range"
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    user = old.get_model("auth", "User").objects.create(username="trader")
    market = old.get_model("exchange", "Market").objects.create(
        subject="office.supplies.pencils", title="Pencils", schema=PENCILS_SCHEMA
    )
    offer = old.get_model("exchange", "Offer").objects.create(
        market=market,
        seller=user,
        constraint_text="lot BETWEEN 1 AND 100 AND price >= 1.00",
        constraint_json={},
    )
    bid = old.get_model("exchange", "Bid").objects.create(
        market=market,
        buyer=user,
        constraint_text="lot = 10 AND price <= 1.50",
        constraint_json={},
    )

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)

    assert Offer.objects.get(pk=offer.pk).set_aside_at is None
    # (only the columns of 0008: later migrations add some to the model)
    assert Bid.objects.values_list("set_aside_reason", flat=True).get(pk=bid.pk) == ""
    match = OfferBidMatch.objects.get()
    assert (match.offer_id, match.bid_id, match.value) == (offer.pk, bid.pk, Decimal("1.50"))
    assert BestOffer.objects.get(offer_id=offer.pk).bid_id == bid.pk
    # the tests after this one need the latest schema back
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
