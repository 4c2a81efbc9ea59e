from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from exchange.market_rules import MarketSchema, schema_parse
from exchange.models import Bid, Market, Offer


def _count_in_market(model: type[Offer] | type[Bid], state: str) -> Coalesce:
    # A correlated count per market: joining both sides in one query would multiply
    # every market's offers by its bids before counting.
    counts = (
        model.objects.filter(market=OuterRef("pk"), state=state)
        .order_by()
        .values("market")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counts, output_field=IntegerField()), Value(0))


def market_list() -> QuerySet[Market]:
    """Every market with its number of open offers and active bids."""
    return Market.objects.annotate(
        open_offers=_count_in_market(Offer, Offer.State.OPEN),
        active_bids=_count_in_market(Bid, Bid.State.ACTIVE),
    ).order_by("subject")


def market_schema(*, market: Market) -> MarketSchema:
    """The typed schema of a market (validated when it was written)."""
    return schema_parse(market.schema)
