"""The exchange's tables, one module per subdomain, all importable from here. No business
rules here (STYLE.md): the invariants are PostgreSQL constraints, the logic is in services."""

from .adapters import ImportRef
from .analytics import MarketDay
from .events import Event, EventCounter
from .idempotency import IdempotencyKey
from .limits import BidOutcome, BuyerCommitment, SpendingLimit
from .markets import Market, MarketOrderCount
from .matching import BestOffer, BestOfferChange, MatchingCycle, OfferBidMatch, OrderChange
from .notifications import Notification
from .orders import Bid, Offer
from .subscriptions import (
    Subscription,
    SubscriptionEngineProcess,
    SubscriptionNotification,
    SubscriptionPartition,
)
from .trades import Trade
from .webhooks import SubscriptionWebhook, WebhookSecret

__all__ = [
    "BestOffer",
    "BestOfferChange",
    "Bid",
    "BidOutcome",
    "BuyerCommitment",
    "Event",
    "EventCounter",
    "IdempotencyKey",
    "ImportRef",
    "Market",
    "MarketDay",
    "MarketOrderCount",
    "MatchingCycle",
    "Notification",
    "Offer",
    "OfferBidMatch",
    "OrderChange",
    "SpendingLimit",
    "Subscription",
    "SubscriptionEngineProcess",
    "SubscriptionNotification",
    "SubscriptionWebhook",
    "SubscriptionPartition",
    "Trade",
    "WebhookSecret",
]
