from .markets import Market
from .orders import Bid, Offer

__all__ = ["Bid", "Market", "Offer"]
