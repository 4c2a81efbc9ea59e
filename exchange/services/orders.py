"""Writing offers and bids: every change goes through these functions."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from exchange.market_rules import order_constraint
from exchange.models import Bid, Market, Offer
from exchange.selectors.markets import market_schema


def offer_publish(
    *,
    seller: AbstractBaseUser,
    market: Market,
    constraint: Any,
    closes_at: dt.datetime | None = None,
) -> Offer:
    """Publish a seller's offer (a publication) in ``market``."""
    rules = order_constraint(
        schema=market_schema(market=market), tick=market.tick, side="offer", source=constraint
    )
    with transaction.atomic():
        return Offer.objects.create(
            market=market,
            seller=seller,
            constraint_text=rules.text,
            constraint_json=rules.json,
            closes_at=closes_at,
        )


def bid_place(*, buyer: AbstractBaseUser, market: Market, constraint: Any) -> Bid:
    """Place a buyer's bid (a subscription) in ``market``."""
    rules = order_constraint(
        schema=market_schema(market=market), tick=market.tick, side="bid", source=constraint
    )
    with transaction.atomic():
        return Bid.objects.create(
            market=market, buyer=buyer, constraint_text=rules.text, constraint_json=rules.json
        )
