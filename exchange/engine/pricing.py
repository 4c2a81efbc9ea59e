"""The value of a matching pair (the highest price both accept) and what a trade agrees on."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal

import matching
from exchange.market_rules import numeric_value
from exchange.models import Bid, Offer, OfferBidMatch
from matching.model import Attribute, Disjunct, Interval

from .candidates import candidate_pairs
from .constraints import UnusableOrders, Usable, order_constraints


def price_interval(disjunct: Disjunct, price: Attribute) -> Interval:
    predicate = disjunct.get(price)
    assert isinstance(predicate, Interval), "usable_constraint checks every price interval"
    return predicate


def pair_value(offer: Disjunct, bid: Disjunct, price: Attribute) -> Decimal:
    """The highest price both accept: the lower of the two upper bounds (a bid always has one)."""
    highs = [
        numeric_value(p.hi)
        for p in (price_interval(offer, price), price_interval(bid, price))
        if p.hi is not None
    ]
    return min(highs)


def pair_values(
    quads: Iterable[tuple[int, int, int, int]],
    *,
    offers: Mapping[int, Usable] | None = None,
    bids: Mapping[int, Usable] | None = None,
) -> list[OfferBidMatch]:
    """One unsaved ``OfferBidMatch`` per (offer, bid): the best value over its matching
    disjunct pairs (the first such pair when several tie).

    ``quads`` are the store's candidate disjunct pairs; the ones that do not match on the
    full constraints (see ``candidate_constraint``) are dropped here. ``offers`` and ``bids``
    are usable constraints the caller already holds: only the other orders are read. Raises
    ``UnusableOrders`` naming every order among them whose stored constraint cannot be used.
    """
    quads = list(quads)
    if not quads:
        return []
    offers, bids = dict(offers or {}), dict(bids or {})
    read_offers, bad_offers = order_constraints(Offer, {q[0] for q in quads} - offers.keys())
    read_bids, bad_bids = order_constraints(Bid, {q[2] for q in quads} - bids.keys())
    if bad_offers or bad_bids:
        raise UnusableOrders(offers=bad_offers, bids=bad_bids)
    offers.update(read_offers)
    bids.update(read_bids)
    by_pair: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for p, pd, s, sd in candidate_pairs(quads, offers, bids):
        by_pair[(p, s)].append((pd, sd))
    out = []
    for (offer_id, bid_id), disjunct_pairs in by_pair.items():
        offer, price = offers[offer_id]
        bid, _ = bids[bid_id]
        best: tuple[Decimal, int, int] | None = None
        for pd, sd in sorted(disjunct_pairs):
            value = pair_value(offer.disjuncts[pd], bid.disjuncts[sd], price)
            if best is None or value > best[0]:
                best = (value, pd, sd)
        assert best is not None
        out.append(
            OfferBidMatch(
                offer_id=offer_id,
                bid_id=bid_id,
                value=best[0],
                pub_disjunct=best[1],
                sub_disjunct=best[2],
            )
        )
    return out


Agreed = tuple[matching.Agreement, Disjunct, Attribute]


def pair_agreements(
    matches: Iterable[OfferBidMatch],
) -> dict[tuple[int, int], Agreed | UnusableOrders]:
    """For each matched pair, by (offer id, bid id): what its disjuncts agree on, the offer's
    disjunct and the price attribute; or, where the offer's or the bid's stored constraint
    cannot be used, an ``UnusableOrders`` naming those two. Two queries for any number of
    pairs."""
    matches = list(matches)
    offers, bad_offers = order_constraints(Offer, {m.offer_id for m in matches})
    bids, bad_bids = order_constraints(Bid, {m.bid_id for m in matches})
    out: dict[tuple[int, int], Agreed | UnusableOrders] = {}
    for m in matches:
        if m.offer_id in bad_offers or m.bid_id in bad_bids:
            out[(m.offer_id, m.bid_id)] = UnusableOrders(
                offers={k: v for k, v in bad_offers.items() if k == m.offer_id},
                bids={k: v for k, v in bad_bids.items() if k == m.bid_id},
            )
            continue
        pub, price = offers[m.offer_id]
        sub, _ = bids[m.bid_id]
        dp = pub.disjuncts[m.pub_disjunct]
        out[(m.offer_id, m.bid_id)] = (matching.agree(dp, sub.disjuncts[m.sub_disjunct]), dp, price)
    return out
