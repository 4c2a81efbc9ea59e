"""Reads behind amending from the web UI: a raised bid's text, a bid pre-filled from an
offer, and a buyer's open exposure (its bids' stored largest awards).

Nothing here writes: the pages hand what these return to ``bid_amend`` and ``bid_place``,
which apply the market's rules again (the tick, the price bounds) as for any other text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User

import matching
from exchange.errors import InvalidInput
from exchange.market_rules import MarketSchema, SchemaAttribute, fixed_price, numeric_value
from exchange.models import Bid, Market, Offer
from exchange.numbers import money_text, price_text, tick_text
from exchange.selectors.markets import market_schema
from exchange.selectors.orders import Standing
from matching.model import Constraint, Disjunct, Interval, Type

from .posting_form import constraint_parsed


def _price_interval(disjunct: Disjunct, price: SchemaAttribute) -> Interval | None:
    predicate = disjunct.get(price.attribute)
    return predicate if isinstance(predicate, Interval) else None


def bid_limit(constraint: Constraint, schema: MarketSchema) -> Decimal | None:
    """The highest price a bid pays anywhere (over its tiers); None if one is unbounded,
    which the market's rules do not let a stored bid be."""
    limits = []
    for disjunct in constraint:
        interval = _price_interval(disjunct, schema.price)
        if interval is None or interval.hi is None:
            return None
        limits.append(numeric_value(interval.hi))
    return max(limits) if limits else None


def offer_fixed_price(*, offer: Offer, schema: MarketSchema) -> bool:
    """Whether ``offer`` sells at a fixed price (False for an auction, or for a stored text
    the schema no longer reads)."""
    try:
        return fixed_price(constraint_parsed(text=offer.constraint_text, schema=schema), schema)
    except matching.ConstraintError:
        return False


def bid_next_price(
    *, bid: Bid, schema: MarketSchema, standings: Iterable[Standing] = ()
) -> str | None:
    """The minimum next bid of ``bid``: the least price that leads one of the offers in
    ``standings`` (its standings, or the one of the page's offer) where another buyer's bid
    is ahead, and at least the bid's limit plus one tick (a raise by less changes no
    match). None when its stored text no longer reads under the schema."""
    try:
        limit = bid_limit(constraint_parsed(text=bid.constraint_text, schema=schema), schema)
    except matching.ConstraintError:
        return None
    if limit is None:
        return None
    tick = bid.market.tick
    leads = [s["min_next"] for s in standings if s["min_next"] is not None]
    return price_text(max(limit + tick, min(leads, default=limit + tick)), tick)


def bid_raised_text(*, bid: Bid, schema: MarketSchema, price: Any) -> str:
    """The bid's constraint with the highest price it pays raised to ``price`` in every tier,
    everything else unchanged.

    ``price`` must be a decimal on the market's tick and at least one tick above the bid's
    current limit (a raise by less than the tick cannot change any match); anything else is
    an ``InvalidInput`` naming the field ``price``.
    """
    tick = bid.market.tick
    try:
        new = Decimal(str(price).strip())
    except ArithmeticError:
        new = None
    if new is None or not new.is_finite():
        raise InvalidInput("invalid_price", "Enter the new price as a number.", field="price")
    constraint = constraint_parsed(text=bid.constraint_text, schema=schema)
    limit = bid_limit(constraint, schema)
    if limit is not None and new < limit + tick:
        raise InvalidInput(
            "raise_too_small",
            f"Raise by at least one tick: {price_text(limit + tick, tick)} or more "
            f"(the bid pays up to {price_text(limit, tick)} now).",
            field="price",
        )
    try:
        off_tick = new % tick != 0
    except ArithmeticError:  # more digits than a division by the tick keeps (1e309): a 500
        raise InvalidInput(
            "invalid_price", f"{str(price).strip()} is too large for a price.", field="price"
        ) from None
    if off_tick:
        raise InvalidInput(
            "off_tick",
            f"{new} is not on this market's tick of {tick_text(tick)}.",
            field="price",
        )
    disjuncts = []
    for disjunct in constraint:
        old = _price_interval(disjunct, schema.price) or Interval(None, False, None, False)
        items = dict(disjunct.items)
        items[schema.price.attribute] = Interval(old.lo, old.lo_closed, new, True)
        disjuncts.append(Disjunct(tuple(items.items())))
    return matching.to_text(Constraint(tuple(disjuncts)))


def _bound_text(value: Any, attribute: SchemaAttribute) -> str:
    if attribute.type is Type.DATE:
        return value.isoformat()
    if attribute.type is Type.TIMESTAMP:
        return value.strftime("%Y-%m-%dT%H:%M")
    return format(numeric_value(value), "f") if attribute.type is not Type.FLOAT else str(value)


def offer_bid_prefill(
    *, offer: Offer, schema: MarketSchema, tier: int = 1, lead: Decimal | None = None
) -> dict[str, str]:
    """The bid form's fields filled from one tier (1-based) of ``offer``: its ranges, its
    string values, and its price as the highest price: the fixed price, or in an auction the
    minimum next bid (the best value ``lead`` plus one tick, at least the reserve).

    What the form cannot hold (points, boxes, open bounds) is left empty, that is "any";
    a tier that does not exist gives the first.
    """
    constraint = constraint_parsed(text=offer.constraint_text, schema=schema)
    disjuncts = list(constraint)
    disjunct = disjuncts[tier - 1] if 1 <= tier <= len(disjuncts) else disjuncts[0]
    data = {"side": "bid"}
    for spec in schema.attributes:
        predicate = disjunct.get(spec.attribute)
        if not isinstance(predicate, Interval):
            continue
        if spec.role == "price":
            if predicate.lo is not None:
                price = numeric_value(predicate.lo)
                if lead is not None and not fixed_price(constraint, schema):
                    price = max(price, lead + offer.market.tick)
                data["price"] = price_text(price, offer.market.tick) or ""
            continue
        if spec.type is Type.STRING:
            if predicate.lo is not None and predicate.lo == predicate.hi:
                data[f"{spec.name}__eq"] = str(predicate.lo)
            continue
        if predicate.lo is not None and predicate.lo_closed:
            data[f"{spec.name}__min"] = _bound_text(predicate.lo, spec)
        if predicate.hi is not None and predicate.hi_closed:
            data[f"{spec.name}__max"] = _bound_text(predicate.hi, spec)
    return data


@dataclass(frozen=True)
class Exposure:
    """A buyer's open exposure in one market: the sum of its active bids' largest awards
    (``Bid.largest_award``, what each commits of the spending limit: the one rule of
    ``exchange.services.limits``), in the price's unit, as money (``money_text``). ``uncounted`` lists the bids placed
    before limits existed, which have no largest award and commit nothing."""

    market: Market
    total: str
    unit: str
    bids: int
    uncounted: list[int]


def user_exposure(*, user: User) -> list[Exposure]:
    """Open exposure per market over the user's active bids, markets by subject: one query
    (the bids' stored awards with their markets) however many bids."""
    bids = (
        Bid.objects.filter(buyer=user, state=Bid.State.ACTIVE)
        .select_related("market")
        .only("id", "largest_award", "market")
        .order_by("market_id", "id")
    )
    per_market: dict[int, tuple[Market, Decimal, int, list[int]]] = {}
    for bid in bids:
        market, total, count, uncounted = per_market.get(
            bid.market_id, (bid.market, Decimal(0), 0, [])
        )
        if bid.largest_award is None:
            uncounted.append(bid.pk)
        per_market[bid.market_id] = (market, total + (bid.largest_award or 0), count + 1, uncounted)
    out = []
    for market, total, count, uncounted in sorted(
        per_market.values(), key=lambda entry: entry[0].subject
    ):
        out.append(
            Exposure(
                market=market,
                total=money_text(price_text(total, market.tick) or "0"),
                unit=market_schema(market=market).price.unit,
                bids=count,
                uncounted=uncounted,
            )
        )
    return out


def user_active_bid_ids(*, user: User, market: Market) -> list[int]:
    return list(
        Bid.objects.filter(buyer=user, market=market, state=Bid.State.ACTIVE)
        .order_by("id")
        .values_list("id", flat=True)
    )
