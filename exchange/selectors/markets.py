"""Reading markets: the list with its counts, the typed schema, and checking a constraint."""

from __future__ import annotations

from django.db.models import IntegerField, OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from exchange.engine.constraints import market_schema_of, storable_check
from exchange.errors import InvalidInput
from exchange.market_rules import (
    ConstraintSource,
    MarketSchema,
    OrderConstraint,
    Side,
    order_constraint,
    with_subject,
)
from exchange.models import Market, MarketOrderCount
from exchange.selectors.subjects import subject_matching
from matching.store import StoreLimitError


def _count_in_market(field: str) -> Coalesce:
    # A market's maintained count is the sum of its MarketOrderCount rows: a handful since
    # the last compaction, not one per order.
    counts = (
        MarketOrderCount.objects.filter(market=OuterRef("pk"))
        .order_by()
        .values("market")
        .annotate(n=Sum(field))
        .values("n")
    )
    return Coalesce(Subquery(counts, output_field=IntegerField()), Value(0))


def market_list(*, subject: str | None = None) -> QuerySet[Market]:
    """Every market, or those whose subject matches the pattern ``subject`` (``InvalidInput``
    if malformed; empty means every market), with its number of open offers and active bids
    (maintained counts, ``MarketOrderCount``: the same figures as counting the orders,
    without reading them)."""
    markets = Market.objects.annotate(
        open_offers=_count_in_market("offers"), active_bids=_count_in_market("bids")
    ).order_by("subject")
    if subject:
        markets = markets.filter(
            subject_matching(field="subject", pattern=subject, parameter="subject")
        )
    return markets


def market_schema(*, market: Market) -> MarketSchema:
    """The typed schema of a market (validated when it was written)."""
    return market_schema_of(market)


def constraint_check(*, market: Market, side: Side, source: ConstraintSource) -> OrderConstraint:
    """A trader's constraint as ``market`` would store it for ``side``, or ``InvalidInput``
    with the position: the market's rules (``order_constraint``), then the store's limits on
    the stored form. Posting and every "check as you type" endpoint call this, so a check
    answers exactly what posting would; nothing is written.
    """
    rules = order_constraint(
        schema=market_schema(market=market), tick=market.tick, side=side, source=source
    )
    try:
        storable_check(with_subject(rules.constraint, market.subject))
    except StoreLimitError as exc:
        raise InvalidInput(
            "too_large",
            f"The constraint holds a value too large to index: {exc}.",
            field="constraint",
            position=0 if isinstance(source, str) else None,
        ) from exc
    return rules
