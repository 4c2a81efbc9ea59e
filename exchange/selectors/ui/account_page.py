"""Reads for the account page: the user's own offers, bids, trades and notifications."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q

from exchange.models import Bid, Notification, Offer, Trade
from exchange.numbers import price_text
from exchange.selectors.orders import bid_outcomes, bid_standings


def user_offers(*, user: User, limit: int = 200) -> list[Offer]:
    return list(
        Offer.objects.filter(seller=user)
        .select_related("market", "best", "trade", "trade__buyer")
        .order_by("-id")[:limit]
    )


def user_bids(*, user: User, limit: int = 200) -> list[dict[str, Any]]:
    """The user's bids, newest first, each with the offers it matches now and its place
    there, how the auctions it matched ended, and its trade when filled."""
    bids = list(
        Bid.objects.filter(buyer=user)
        .select_related("market", "trade", "trade__offer")
        .order_by("-id")[:limit]
    )
    standings = bid_standings(bids=bids)
    outcomes = bid_outcomes(bids=bids)
    return [
        {
            "bid": bid,
            "standings": standings.get(bid.pk, []),
            "matches": [
                {
                    "offer": s["offer"],
                    "value": price_text(s["value"], bid.market.tick),
                    "best": s["best"],
                    "behind_own": s["behind_own"],
                    "lead": price_text(s["lead"], bid.market.tick),
                    "min_next": price_text(s["min_next"], bid.market.tick),
                }
                for s in standings.get(bid.pk, [])
            ],
            "outcomes": outcomes.get(bid.pk, []),
        }
        for bid in bids
    ]


def user_trades(*, user: User, limit: int = 100) -> list[Trade]:
    return list(
        Trade.objects.filter(Q(seller=user) | Q(buyer=user))
        .select_related("market", "seller", "buyer")
        .order_by("-closed_at", "-id")[:limit]
    )


def user_notifications(*, user: User, limit: int = 30) -> list[Notification]:
    """The user's latest personal notifications, newest first."""
    return list(
        Notification.objects.filter(recipient=user).select_related("market").order_by("-id")[:limit]
    )


def user_open_offer_ids(*, user: User, limit: int = 100) -> list[int]:
    return list(
        Offer.objects.filter(seller=user, state=Offer.State.OPEN)
        .order_by("-id")
        .values_list("id", flat=True)[:limit]
    )
