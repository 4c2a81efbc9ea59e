"""The staff console (SPEC 6.4): Django admin for markets, orders, trades and users."""

from . import markets, orders, tokens, trades  # noqa: F401
