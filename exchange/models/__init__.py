from .analytics import MarketDay
from .events import Event, EventCounter
from .idempotency import IdempotencyKey
from .markets import Market
from .matching import BestOffer, BestOfferChange, MatchingCycle, OfferBidMatch, OrderChange
from .notifications import Notification
from .orders import Bid, Offer
from .trades import Trade

__all__ = [
    "BestOffer",
    "BestOfferChange",
    "Bid",
    "Event",
    "EventCounter",
    "IdempotencyKey",
    "Market",
    "MarketDay",
    "MatchingCycle",
    "Notification",
    "Offer",
    "OfferBidMatch",
    "OrderChange",
    "Trade",
]
