"""The exchange's view of the matching engine: its constraint store and the order constraints.

The store lives in the exchange's own database, in a PostgreSQL schema per strategy
(``engine_range``, ``engine_paper``), and works on Django's connection, so a matching cycle
updates the store, the best-offer table and the outbox in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from functools import lru_cache

from django.conf import settings
from django.db import connection

import matching
from matching.model import Attribute, Constraint, Disjunct, Interval, Type
from matching.semantics import disjuncts_match

from .market_rules import subject_attribute, with_subject
from .models import Bid, Market, Offer

STRATEGIES = ("range", "paper")
SUBJECT_ATTRIBUTE = subject_attribute()


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


def candidate_constraint(order: Offer | Bid) -> Constraint:
    """What the engine's store indexes for an order: a weaker constraint that finds candidates.

    Every order of a market constrains the subject to the same value, and the prices of
    bids and offers overlap almost always (a reserve is a lower bound, a bid's limit an
    upper one), so those two predicates meet on nearly every pair: a store that counted
    them would touch offers x bids rows to find a handful of matches. The store therefore
    indexes each disjunct without them, with its other attributes renamed into the
    market (``lot`` of market 7 becomes ``m7__lot``, so markets never meet), and the
    cycle decides each candidate pair on the full constraints (``candidate_pairs``).

    Nothing is lost: if full disjuncts dp and ds match, every attribute of dp is in ds
    and meets it there, so the same holds of what is left of them; the subject they
    share makes the renaming the same. A bid also carries the market's marker ``m7 = 0``
    and an offer carries it only when nothing else would be left, so such an offer
    still meets only its own market's bids.
    """
    market = order.market
    drop = {SUBJECT_ATTRIBUTE, price_attribute(market)}
    marker_attribute, marker = _marker(market.pk)
    prefix = f"{marker_attribute.name}__"
    disjuncts = []
    for d in _parsed(order.constraint_text):
        kept = tuple(
            (Attribute(prefix + attribute.name, attribute.type), predicate)
            for attribute, predicate in d.items
            if attribute not in drop
        )
        if isinstance(order, Bid) or not kept:
            kept = ((marker_attribute, marker), *kept)
        disjuncts.append(Disjunct(kept))
    return Constraint(tuple(disjuncts))


@lru_cache(maxsize=4096)
def _marker(market_id: int) -> tuple[Attribute, Interval]:
    return Attribute(f"m{market_id}", Type.INT), Interval(0, True, 0, True)


def candidate_pairs(
    quads: Iterable[tuple[int, int, int, int]],
    offers: Mapping[int, tuple[Constraint, Attribute]],
    bids: Mapping[int, tuple[Constraint, Attribute]],
) -> Iterator[tuple[int, int, int, int]]:
    """The candidate disjunct pairs of the store that match on the full constraints."""
    for p, pd, s, sd in quads:
        if disjuncts_match(offers[p][0].disjuncts[pd], bids[s][0].disjuncts[sd]):
            yield p, pd, s, sd


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
