"""Reads for an offer's page: the offer, its best value over time, the visitor's bids on it,
and the depth of matching bids."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, User

import matching
from exchange.engine.constraints import market_schema_of, order_constraints
from exchange.market_rules import numeric_value
from exchange.models import BestOfferChange, Bid, Offer, OfferBidMatch
from exchange.numbers import money_text, price_text
from exchange.selectors.orders import bid_standings, offer_list


def offer_page_get(*, offer_id: int) -> Offer | None:
    """An offer in any state (anyone may see it), with its market, best row and trade."""
    return offer_list().filter(pk=offer_id).first()


def offer_best_history(*, offer: Offer, limit: int = 1000) -> list[dict[str, Any]]:
    """The offer's best value over time (``BestOfferChange`` rows), oldest first.

    ``value`` is None while no bid matches. Times are Unix seconds; a second with several
    changes keeps the last one (a chart needs one point per time).
    """
    rows = list(
        BestOfferChange.objects.filter(offer=offer)
        .order_by("-at", "-id")
        .values_list("at", "value", "matching_bids")[:limit]
    )
    rows.reverse()
    points: dict[int, dict[str, Any]] = {}
    for at, value, bids in rows:
        second = int(at.timestamp())
        points[second] = {
            "time": second,
            "value": None if value is None else float(value),
            "text": price_text(value, offer.market.tick),
            "matching_bids": bids,
        }
    return list(points.values())


def offer_bids_of_user(*, offer: Offer, user: User | AnonymousUser) -> list[dict[str, Any]]:
    """The user's active bids that match ``offer`` now: value there and whether best."""
    if not user.is_authenticated:
        return []
    bids = list(
        Bid.objects.filter(buyer=user, state=Bid.State.ACTIVE, matches__offer=offer)
        .select_related("market")
        .order_by("id")
    )
    standings = bid_standings(bids=bids)
    out = []
    for bid in bids:
        for s in standings.get(bid.pk, []):
            if s["offer"] == offer.pk:
                out.append(
                    {
                        "bid": bid,
                        "value": price_text(s["value"], offer.market.tick),
                        "best": s["best"],
                        "behind_own": s["behind_own"],
                        "min_next": price_text(s["min_next"], offer.market.tick),
                        "standing": s,
                    }
                )
    return out


def offer_depth(*, offer: Offer, limit: int = 20) -> list[dict[str, Any]]:
    """The bids that match an open ``offer`` now, best first (the best-offer table's order:
    value, then the earlier bid, then the lower id), anonymised: each one's value, the
    largest quantity it would take (from what the pair agrees on; None when unbounded or
    the market has no quantity) and the total at its value. No bid's id, owner or
    constraint is in it (SPEC 5.6)."""
    if offer.state != Offer.State.OPEN:
        return []
    rows = list(
        OfferBidMatch.objects.filter(offer=offer)
        .order_by("-value", "bid__priority_at", "bid_id")
        .values_list("bid_id", "value", "pub_disjunct", "sub_disjunct")[:limit]
    )
    if not rows:
        return []
    offers, _ = order_constraints(Offer, {offer.pk})
    bids, _ = order_constraints(Bid, {row[0] for row in rows})
    quantity = market_schema_of(offer.market).by_role("quantity")
    tick = offer.market.tick
    depth = []
    for rank, (bid_id, value, pd, sd) in enumerate(rows, start=1):
        amount = None
        if offer.pk in offers and bid_id in bids and quantity is not None:
            agreement = matching.agree(
                offers[offer.pk][0].disjuncts[pd], bids[bid_id][0].disjuncts[sd]
            )
            top = agreement.max_value(quantity.attribute)
            amount = None if top is None else numeric_value(top)
        depth.append(
            {
                "rank": rank,
                "value": price_text(value, tick),
                "quantity": amount,
                "total": None if amount is None else money_text(price_text(value * amount, tick)),
            }
        )
    return depth
