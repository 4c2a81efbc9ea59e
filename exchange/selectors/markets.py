from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from exchange.models import Market


def market_list() -> QuerySet[Market]:
    """Every market with its number of open offers and active bids."""
    return Market.objects.annotate(
        open_offers=Count("offer", filter=Q(offer__state="open"), distinct=True),
        active_bids=Count("bid", filter=Q(bid__state="active"), distinct=True),
    ).order_by("subject")
