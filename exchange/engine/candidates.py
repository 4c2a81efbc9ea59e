"""What the store indexes for an order: a weaker constraint that finds candidate pairs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache

from exchange.market_rules import subject_attribute
from exchange.models import Bid, Offer
from matching.model import Attribute, Constraint, Disjunct, Interval, Type
from matching.semantics import disjuncts_match

from .constraints import Usable, order_usable

SUBJECT_ATTRIBUTE = subject_attribute()


def candidate_constraint(order: Offer | Bid) -> Constraint:
    """What the engine's store indexes for an order; ``UnusableOrder`` if it cannot be used."""
    return candidate_of(order, order_usable(order))


def candidate_of(order: Offer | Bid, usable: Usable) -> Constraint:
    """What the engine's store indexes for an order whose ``order_usable`` is ``usable``.

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
    stored, price = usable
    drop = {SUBJECT_ATTRIBUTE, price}
    marker_attribute, marker = _marker(order.market_id)
    prefix = f"{marker_attribute.name}__"
    disjuncts = []
    for d in stored:
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
    offers: Mapping[int, Usable],
    bids: Mapping[int, Usable],
) -> Iterator[tuple[int, int, int, int]]:
    """The candidate disjunct pairs of the store that match on the full constraints."""
    for p, pd, s, sd in quads:
        if disjuncts_match(offers[p][0].disjuncts[pd], bids[s][0].disjuncts[sd]):
            yield p, pd, s, sd
