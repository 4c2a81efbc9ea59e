"""Reading offers, bids, trades and notifications with the visibility rules of SPEC 5.6."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import TypedDict

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from exchange.models import BestOffer, Bid, Notification, Offer, OfferBidMatch, Trade
from exchange.selectors.subjects import subject_matching


def offer_list(*, market: str | None = None, state: str | None = None) -> QuerySet[Offer]:
    """Offers anyone may see (every state), with their best value and bid count; ``market``
    is a subject pattern (``InvalidInput`` if malformed; empty means every market)."""
    offers = Offer.objects.select_related("market", "best", "trade").order_by("id")
    if market:
        offers = offers.filter(
            subject_matching(field="market__subject", pattern=market, parameter="market")
        )
    if state:
        offers = offers.filter(state=state)
    return offers


def offer_get(*, offer_id: int) -> Offer | None:
    return offer_list().filter(pk=offer_id).first()


def bid_list(*, user: User | AnonymousUser) -> QuerySet[Bid]:
    """A user's own bids: a bid's constraint is visible to its owner and staff only."""
    if not user.is_authenticated:
        return Bid.objects.none()
    return Bid.objects.filter(buyer=user).select_related("market").order_by("id")


def bid_get(*, user: User | AnonymousUser, bid_id: int) -> Bid | None:
    if not user.is_authenticated:
        return None
    bids = Bid.objects.select_related("market")
    if not user.is_staff:
        bids = bids.filter(buyer=user)
    return bids.filter(pk=bid_id).first()


class Standing(TypedDict):
    """A bid's place on one offer it matches: its value there, and whether it is the best."""

    offer: int
    value: Decimal
    best: bool


def bid_standings(*, bids: list[Bid]) -> dict[int, list[Standing]]:
    """For each bid, the offers it matches now, its value there, and whether it is best."""
    ids = [b.pk for b in bids]
    best_on = set(BestOffer.objects.filter(bid_id__in=ids).values_list("offer_id", "bid_id"))
    out: dict[int, list[Standing]] = defaultdict(list)
    for offer_id, bid_id, value in (
        OfferBidMatch.objects.filter(bid_id__in=ids)
        .order_by("offer_id")
        .values_list("offer_id", "bid_id", "value")
    ):
        out[bid_id].append(
            {"offer": offer_id, "value": value, "best": (offer_id, bid_id) in best_on}
        )
    return out


def trade_list(*, user: User | AnonymousUser, market: str | None = None) -> QuerySet[Trade]:
    """Trades, newest first; ``market`` is a subject pattern as in ``offer_list``."""
    trades = Trade.objects.select_related("market", "seller", "buyer").order_by("-closed_at", "-id")
    if market:
        trades = trades.filter(
            subject_matching(field="market__subject", pattern=market, parameter="market")
        )
    return trades


def trade_party(trade: Trade, user: User | AnonymousUser) -> bool:
    return bool(
        user.is_authenticated and (user.is_staff or user.pk in (trade.seller_id, trade.buyer_id))
    )


def notification_list(*, user_id: int, after: int = 0) -> QuerySet[Notification]:
    """User ``user_id``'s personal notifications with an id (the sequence number a client
    resumes from) above ``after``, oldest first. The one home of this query: the API's list
    and the WebSocket's ``me`` stream read it."""
    return (
        Notification.objects.filter(recipient_id=user_id, id__gt=after)
        .select_related("market")
        .order_by("id")
    )


def notification_latest_seq(*, user: User | AnonymousUser) -> int:
    """The newest personal notification's sequence number, where a client that has seen
    everything resumes (0: none yet, or not signed in). The one home of this query: pages
    and the WebSocket's ``me`` stream start from it."""
    if not user.is_authenticated:
        return 0
    last = (
        Notification.objects.filter(recipient=user)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    return last or 0
