"""The staff console (SPEC 6.4): Django admin for markets, orders, trades, subscriptions and users."""

from . import limits, markets, orders, subscriptions, tokens, trades  # noqa: F401 - each registers its admin classes
