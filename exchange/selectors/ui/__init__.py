"""Reads for the web UI's pages (SPEC 6.1), one module per page, with the visibility rules of
SPEC 5.6.

Nothing here writes. The pages call these and shape the result for templates; the same
visibility rules as the API apply (a bid's constraint only for its owner, the buyer of a
trade only for its parties). The views reach every function as ``ui.<name>``.
"""

from exchange.selectors.markets import constraint_check

from .account_page import (
    user_bids,
    user_notifications,
    user_offers,
    user_open_offer_ids,
    user_trades,
)
from .alerts_page import (
    FEED_SHOWN,
    alerts_chart_subject,
    alerts_event_places,
    alerts_feeds,
    alerts_followed,
    alerts_markets,
    alerts_notes,
    alerts_open_offer,
    alerts_recent,
    alerts_trade_prices,
)
from .amend import (
    Exposure,
    bid_limit,
    bid_next_price,
    bid_raised_text,
    offer_bid_prefill,
    offer_fixed_price,
    user_active_bid_ids,
    user_exposure,
)
from .bid_page import HistoryEntry, bid_history
from .market_page import (
    CANDLE_INTERVALS,
    CANDLE_WIDTHS,
    MAX_CANDLES,
    SubjectNode,
    market_candles,
    market_get,
    market_open_offers,
    market_recent_trades,
    market_tree,
)
from .offer_page import offer_best_history, offer_bids_of_user, offer_depth, offer_page_get
from .posting_form import constraint_parsed

__all__ = [
    "HistoryEntry",
    "bid_history",
    "FEED_SHOWN",
    "alerts_chart_subject",
    "alerts_event_places",
    "alerts_feeds",
    "alerts_followed",
    "alerts_markets",
    "alerts_notes",
    "alerts_open_offer",
    "alerts_recent",
    "alerts_trade_prices",
    "CANDLE_INTERVALS",
    "CANDLE_WIDTHS",
    "Exposure",
    "MAX_CANDLES",
    "SubjectNode",
    "bid_limit",
    "bid_next_price",
    "bid_raised_text",
    "constraint_check",
    "constraint_parsed",
    "market_candles",
    "market_get",
    "market_open_offers",
    "market_recent_trades",
    "market_tree",
    "offer_best_history",
    "offer_bid_prefill",
    "offer_fixed_price",
    "offer_bids_of_user",
    "offer_depth",
    "offer_page_get",
    "user_active_bid_ids",
    "user_bids",
    "user_exposure",
    "user_notifications",
    "user_offers",
    "user_open_offer_ids",
    "user_trades",
]
