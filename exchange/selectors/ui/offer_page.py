"""Reads for an offer's page: the offer, its best value over time, the visitor's bids on it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, User

from exchange.market_rules import price_text
from exchange.models import BestOfferChange, Bid, Offer
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
                    }
                )
    return out
