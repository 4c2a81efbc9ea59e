"""The exchange's view of the matching engine: its constraint store and the order constraints.

The store lives in the exchange's own database, in a PostgreSQL schema per strategy
(``engine_range``, ``engine_paper``), and works on Django's connection, so a matching cycle
updates the store, the best-offer table and the outbox in one transaction.
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

from django.conf import settings
from django.db import connection

import matching
from matching.model import Attribute, Constraint, Disjunct, Interval, Type

from .market_rules import with_subject
from .models import Bid, Market, Offer

STRATEGIES = ("range", "paper")


def strategy() -> str:
    return settings.MATCHING_STRATEGY


def namespace(name: str | None = None) -> str:
    return f"engine_{name or strategy()}"


def store(name: str | None = None):
    """The engine's constraint store, on the current transaction's connection."""
    from matching.store import open_store

    connection.ensure_connection()
    return open_store(connection.connection, strategy=name or strategy(), namespace=namespace(name))


def scratch_store(name: str, scratch_namespace: str):
    """A fresh, empty store of strategy ``name`` in its own namespace (drop it when done)."""
    from matching.store import open_store

    connection.ensure_connection()
    scratch = open_store(connection.connection, strategy=name, namespace=scratch_namespace)
    scratch.create()
    return scratch


@lru_cache(maxsize=200_000)
def _parsed(text: str) -> Constraint:
    # Stored texts are canonical, so they parse without the market's schema.
    return matching.parse(text)


def order_constraint(order: Offer | Bid) -> Constraint:
    """The constraint the engine stores for an order: its own plus the market's subject."""
    return with_subject(_parsed(order.constraint_text), order.market.subject)


def price_attribute(market: Market) -> Attribute:
    spec = next(a for a in market.schema if a.get("role") == "price")
    return Attribute(spec["name"], Type.DECIMAL)


def quantity_attribute(market: Market) -> Attribute | None:
    spec = next((a for a in market.schema if a.get("role") == "quantity"), None)
    return None if spec is None else Attribute(spec["name"], Type(spec["type"]))


def constraints(
    model: type[Offer] | type[Bid], ids: set[int]
) -> dict[int, tuple[Constraint, Attribute]]:
    """The engine constraints of some orders with their market's price attribute."""
    rows = (
        model.objects.filter(id__in=ids)
        .select_related("market")
        .only("id", "constraint_text", "market__subject", "market__schema")
    )
    return {o.pk: (order_constraint(o), price_attribute(o.market)) for o in rows}


def price_interval(disjunct: Disjunct, price: Attribute) -> Interval:
    predicate = disjunct.get(price)
    assert isinstance(predicate, Interval), "market rules give every order a price interval"
    return predicate


def pair_value(offer: Disjunct, bid: Disjunct, price: Attribute) -> Decimal:
    """The highest price both accept: the lower of the two upper bounds (a bid always has one)."""
    highs = [
        Decimal(p.hi)
        for p in (price_interval(offer, price), price_interval(bid, price))
        if p.hi is not None
    ]
    return min(highs)
