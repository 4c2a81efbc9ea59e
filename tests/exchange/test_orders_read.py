"""``orders_read`` loads orders as the ORM's ``select_related("market").only(...)`` of the same
fields would (issue 36: one statement written out instead of the ORM's per call): the same
orders in the same order, the same values, the same fields deferred, and with ``live`` only
the open offers and active bids not set aside, as the cycle's ``_live`` took them. Both
choices of fields the cycle reads are tried: the engine's, and what the best-offer
notifications read of an offer.

Generated books (states, set-aside orders, two markets) and id sets (with ids of the other
kind and ids that name nothing) are read both ways and compared field by field.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import models, transaction
from django.utils import timezone
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from exchange.engine import orders_read, orders_usable
from exchange.engine.constraints import MARKET_READ_FIELDS, ORDER_READ_FIELDS
from exchange.models import Bid, Offer
from exchange.services.matching import _live
from exchange.services.notifications import BEST_OFFER_FIELDS, BEST_OFFER_MARKET_FIELDS
from exchange.services.orders import bid_place, offer_publish
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db

ORDERS = 6
# The fields read (the order's, the market's), and the same as the ORM's ``only`` names them.
READS = {
    "engine": (
        ORDER_READ_FIELDS,
        MARKET_READ_FIELDS,
        ("id", "constraint_text", "market__subject", "market__schema"),
    ),
    "best offers": (
        BEST_OFFER_FIELDS,
        BEST_OFFER_MARKET_FIELDS,
        ("market", "seller", "state", "constraint_text")
        + ("market__subject", "market__tick", "market__pricing", "market__schema"),
    ),
}


@pytest.fixture
def book() -> dict[type[models.Model], list[int]]:
    """Offers and bids in two markets, the ids of each kind."""
    markets = [pencils_market(), pencils_market(subject="office.supplies.pens")]
    person = UserFactory()
    offers = [
        offer_publish(
            seller=person,
            market=markets[i % 2],
            constraint=f"lot BETWEEN {10 * i + 1} AND {10 * i + 5} AND price >= 1.00",
        ).pk
        for i in range(ORDERS)
    ]
    bids = [
        bid_place(
            buyer=person, market=markets[i % 2], constraint=f"lot = {10 * i + 1} AND price <= 2"
        ).pk
        for i in range(ORDERS)
    ]
    return {Offer: offers, Bid: bids}


def _as_loaded(order: Offer | Bid, read: str) -> dict[str, Any]:
    """What a loaded order holds: its class, the values of the ``read`` fields, which fields
    are deferred, and its market's read values and deferred fields."""
    fields, market_fields, _ = READS[read]
    market = order.market
    return {
        "class": type(order),
        "values": [getattr(order, name) for name in ("id", *fields)],
        "deferred": order.get_deferred_fields(),
        "adding": order._state.adding,
        "db": order._state.db,
        "market": [getattr(market, name) for name in ("id", *market_fields)],
        "market_deferred": market.get_deferred_fields(),
    }


def orm_read(
    model: type[Offer] | type[Bid], ids: set[int], live: bool, read: str
) -> list[Offer | Bid]:
    """The same read through the ORM."""
    queryset = _live(model) if live else model.objects.select_related("market")
    return list(queryset.filter(id__in=ids).only(*READS[read][2]))


states = st.lists(
    st.tuples(st.integers(0, ORDERS - 1), st.booleans(), st.booleans()), max_size=ORDERS
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from([Offer, Bid]),
    changed=states,
    picked=st.lists(st.integers(0, 3 * ORDERS), max_size=2 * ORDERS),
    live=st.booleans(),
    read=st.sampled_from(sorted(READS)),
)
def test_orders_read_loads_what_the_orm_loads(book, kind, changed, picked, live, read):
    assume(kind is Offer or read == "engine")  # (the best offers' fields are an offer's)
    with transaction.atomic():  # each example on the fixture's book as it was
        # Given orders of which some have ended (withdrawn) or are set aside
        ended = Offer.State.WITHDRAWN if kind is Offer else Bid.State.WITHDRAWN
        pks = book[kind]
        for index, end, aside in changed:
            fields: dict[str, Any] = {"state": ended} if end else {}
            if aside:
                fields.update(set_aside_at=timezone.now(), set_aside_reason="unusable")
            if fields:
                kind.objects.filter(pk=pks[index]).update(**fields)
        # and ids of this kind, of the other kind and of nothing
        everything = sorted(pks + book[Bid if kind is Offer else Offer])
        ids = {everything[i] if i < len(everything) else 10**9 + i for i in picked}

        # When they are read both ways
        fields, market_fields, _ = READS[read]
        found = orders_read(kind, ids, live=live, fields=fields, market_fields=market_fields)
        expected = orm_read(kind, ids, live, read)

        # Then the same orders come, in the same order, loaded alike
        assert [o.pk for o in found] == [o.pk for o in expected]
        assert [_as_loaded(o, read) for o in found] == [_as_loaded(o, read) for o in expected]
        # and the engine makes the same of them
        assert orders_usable(found) == orders_usable(expected)
        # and a deferred field is read on first use, as the ORM's is
        for order, orm in zip(found, expected, strict=True):
            assert order.version == orm.version
            assert order.created_at == orm.created_at
        transaction.set_rollback(True)


def test_orders_read_of_no_ids_runs_no_statement(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert orders_read(Bid, set(), live=True) == []
