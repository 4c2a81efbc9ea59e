"""Reads for the web UI's pages (SPEC 6.1), with the visibility rules of SPEC 5.6.

Nothing here writes. The pages call these and shape the result for templates; the same
visibility rules as the API apply (a bid's constraint only for its owner, the buyer of a
trade only for its parties).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q

import matching
from exchange.market_rules import (
    MarketSchema,
    OrderConstraint,
    Side,
    order_constraint,
    price_text,
)
from exchange.models import BestOfferChange, Bid, Market, Notification, Offer, Trade
from exchange.selectors.markets import market_list, market_schema
from exchange.selectors.orders import bid_standings, offer_list, trade_list

# Candle widths to choose from, in seconds: the smallest that keeps the chart readable.
CANDLE_INTERVALS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400)
MAX_CANDLES = 60


# -- markets --------------------------------------------------------------------------


@dataclass
class SubjectNode:
    """One token of the subject tree; ``market`` is set where a market has this subject."""

    token: str
    path: str
    market: Market | None = None
    children: list[SubjectNode] = field(default_factory=list)


def market_tree(*, query: str = "") -> list[SubjectNode]:
    """Markets arranged by their dot-separated subjects, optionally filtered by a search text
    (matched against subject, title and description; every word must match)."""
    markets = market_list()
    for word in query.split()[:8]:
        markets = markets.filter(
            Q(subject__icontains=word) | Q(title__icontains=word) | Q(description__icontains=word)
        )
    roots: list[SubjectNode] = []
    index: dict[str, SubjectNode] = {}
    for market in markets:
        siblings, path = roots, ""
        for token in market.subject.split("."):
            path = f"{path}.{token}" if path else token
            node = index.get(path)
            if node is None:
                node = index[path] = SubjectNode(token=token, path=path)
                siblings.append(node)
            siblings = node.children
        index[market.subject].market = market
    return roots


def market_get(*, subject: str) -> Market | None:
    return market_list().filter(subject=subject).first()


def market_open_offers(*, market: Market, limit: int = 200) -> list[Offer]:
    return list(offer_list(market=market.subject, state=Offer.State.OPEN)[:limit])


def market_recent_trades(*, market: Market, limit: int = 50) -> list[Trade]:
    return list(trade_list(user=AnonymousUser(), market=market.subject)[:limit])


def market_candles(*, market: Market, limit: int = 2000) -> dict[str, Any]:
    """OHLC candles and volume of the market's last trades, for the price chart.

    Each candle opens at the previous candle's close. The candle width is the smallest of ``CANDLE_INTERVALS`` that shows the traded span in
    at most ``MAX_CANDLES`` candles. Times are Unix seconds (UTC); prices are floats for the
    chart only (the tables show the exact decimals).
    """
    rows = list(
        Trade.objects.filter(market=market)
        .order_by("-closed_at", "-id")
        .values_list("closed_at", "price", "quantity")[:limit]
    )
    rows.reverse()
    if not rows:
        return {"interval": 60, "candles": []}
    span = (rows[-1][0] - rows[0][0]).total_seconds()
    interval = next((i for i in CANDLE_INTERVALS if span / i <= MAX_CANDLES), CANDLE_INTERVALS[-1])
    candles: list[dict[str, Any]] = []
    for closed_at, price, quantity in rows:
        bucket = int(closed_at.timestamp()) // interval * interval
        value = float(price)
        volume = float(quantity or 0)
        if candles and candles[-1]["time"] == bucket:
            c = candles[-1]
            c["high"], c["low"], c["close"] = max(c["high"], value), min(c["low"], value), value
            c["volume"] += volume
            c["trades"] += 1
        else:
            # A candle opens at the previous close (trades are sparse: a lone trade still
            # shows which way the price moved).
            start = candles[-1]["close"] if candles else value
            candles.append(
                {
                    "time": bucket,
                    "open": start,
                    "high": max(start, value),
                    "low": min(start, value),
                    "close": value,
                    "volume": volume,
                    "trades": 1,
                }
            )
    return {"interval": interval, "candles": candles}


# -- offers ---------------------------------------------------------------------------


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


def offer_bids_of_user(
    *, offer: Offer, user: AbstractBaseUser | AnonymousUser
) -> list[dict[str, Any]]:
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


# -- the user's own orders ------------------------------------------------------------


def user_offers(*, user: AbstractBaseUser, limit: int = 200) -> list[Offer]:
    return list(
        Offer.objects.filter(seller=user)
        .select_related("market", "best", "trade", "trade__buyer")
        .order_by("-id")[:limit]
    )


def user_bids(*, user: AbstractBaseUser, limit: int = 200) -> list[dict[str, Any]]:
    """The user's bids, newest first, each with the offers it matches now and where it is
    best, and its trade when filled."""
    bids = list(
        Bid.objects.filter(buyer=user)
        .select_related("market", "trade", "trade__offer")
        .order_by("-id")[:limit]
    )
    standings = bid_standings(bids=bids)
    return [
        {
            "bid": bid,
            "matches": [
                {
                    "offer": s["offer"],
                    "value": price_text(s["value"], bid.market.tick),
                    "best": s["best"],
                }
                for s in standings.get(bid.pk, [])
            ],
        }
        for bid in bids
    ]


def user_trades(*, user: AbstractBaseUser, limit: int = 100) -> list[Trade]:
    return list(
        Trade.objects.filter(Q(seller=user) | Q(buyer=user))
        .select_related("market", "seller", "buyer")
        .order_by("-closed_at", "-id")[:limit]
    )


def user_notifications(*, user: AbstractBaseUser, limit: int = 30) -> list[Notification]:
    """The user's latest personal notifications, newest first."""
    return list(
        Notification.objects.filter(recipient=user).select_related("market").order_by("-id")[:limit]
    )


def user_latest_seq(*, user: AbstractBaseUser | AnonymousUser) -> int:
    """The sequence number a page resumes the ``me`` stream after (0: none yet)."""
    if not user.is_authenticated:
        return 0
    last = (
        Notification.objects.filter(recipient=user)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    return last or 0


def user_open_offer_ids(*, user: AbstractBaseUser, limit: int = 100) -> list[int]:
    return list(
        Offer.objects.filter(seller=user, state=Offer.State.OPEN)
        .order_by("-id")
        .values_list("id", flat=True)[:limit]
    )


# -- constraints ----------------------------------------------------------------------


def constraint_check(*, market: Market, side: Side, source: Any) -> OrderConstraint:
    """Apply the market's rules to a constraint without storing anything (the posting form's
    check as you type). Raises ``InvalidInput`` with the position, exactly as posting would."""
    return order_constraint(
        schema=market_schema(market=market), tick=market.tick, side=side, source=source
    )


def constraint_parsed(*, text: str, schema: MarketSchema) -> matching.Constraint:
    """A stored order's canonical text, parsed back with the market's schema."""
    return matching.parse(text, schema=schema.types)
