from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from exchange.market_rules import MarketSchema, schema_parse
from exchange.models import Market


def market_list() -> QuerySet[Market]:
    """Every market with its number of open offers and active bids."""
    return Market.objects.annotate(
        open_offers=Count("offer", filter=Q(offer__state="open"), distinct=True),
        active_bids=Count("bid", filter=Q(bid__state="active"), distinct=True),
    ).order_by("subject")


def market_schema(*, market: Market) -> MarketSchema:
    """The typed schema of a market (validated when it was written)."""
    return schema_parse(market.schema)
