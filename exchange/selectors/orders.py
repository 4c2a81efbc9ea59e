"""Reading offers, bids, trades and notifications with the visibility rules of SPEC 5.6."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import TypedDict

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet, Sum
from django.db.models.functions import Coalesce

from exchange.models import (
    BestOffer,
    Bid,
    BidOutcome,
    MarketOrderCount,
    Notification,
    Offer,
    OfferBidMatch,
    Trade,
)
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


def open_offer_count(*, market: str | None = None) -> int:
    """How many offers ``offer_list(market=market, state=open)`` holds, from the maintained
    counts (``MarketOrderCount``, kept by triggers in each order's transaction): the same
    number in any snapshot, without reading every open offer. Counting them was the
    best-offer page's costliest statement (about 3 ms of PostgreSQL per page over 10,000
    open offers on the live benchmark, pg_stat_statements)."""
    # Through the markets' table: rows of a market deleted since the last compaction are
    # not tied to it by a constraint (they sum to nothing, but are left out all the same).
    counts = MarketOrderCount.objects.filter(market__subject__isnull=False)
    if market:
        counts = counts.filter(
            subject_matching(field="market__subject", pattern=market, parameter="market")
        )
    return int(counts.aggregate(n=Coalesce(Sum("offers"), 0))["n"])


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
    """A bid's place on one offer it matches: its value there, whether it is the best, and
    if not, the best value there (``lead``), whether the bid ahead is the same buyer's
    (``behind_own``) and the least a bid must name to lead (``min_next``: the lead plus
    one tick; None when the bid is best or only its buyer's own bid is ahead)."""

    offer: int
    value: Decimal
    best: bool
    lead: Decimal | None
    behind_own: bool
    min_next: Decimal | None


def bid_standings(*, bids: list[Bid]) -> dict[int, list[Standing]]:
    """For each bid (its market loaded), the offers it matches now and its place there."""
    ids = [b.pk for b in bids]
    by_id = {b.pk: b for b in bids}
    matches = list(
        OfferBidMatch.objects.filter(bid_id__in=ids)
        .order_by("offer_id")
        .values_list("offer_id", "bid_id", "value")
    )
    leads = {
        offer_id: (bid_id, value, buyer_id)
        for offer_id, bid_id, value, buyer_id in BestOffer.objects.filter(
            offer_id__in={m[0] for m in matches}, bid__isnull=False
        ).values_list("offer_id", "bid_id", "value", "bid__buyer_id")
    }
    out: dict[int, list[Standing]] = defaultdict(list)
    for offer_id, bid_id, value in matches:
        bid = by_id[bid_id]
        lead_bid, lead, lead_buyer = leads.get(offer_id, (None, None, None))
        best = lead_bid == bid_id
        behind_own = not best and lead_buyer == bid.buyer_id
        out[bid_id].append(
            {
                "offer": offer_id,
                "value": value,
                "best": best,
                "lead": None if best else lead,
                "behind_own": behind_own,
                "min_next": (
                    None if best or behind_own or lead is None else lead + bid.market.tick
                ),
            }
        )
    return out


def bid_outcomes(*, bids: list[Bid]) -> dict[int, list[BidOutcome]]:
    """For each bid, how the auctions it matched ended (oldest first)."""
    out: dict[int, list[BidOutcome]] = defaultdict(list)
    for outcome in BidOutcome.objects.filter(bid_id__in=[b.pk for b in bids]).order_by("id"):
        out[outcome.bid_id].append(outcome)
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
