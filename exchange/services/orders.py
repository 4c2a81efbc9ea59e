"""Writing offers and bids (SPEC 5.2): every change of an order goes through these functions.

Each function owns its transaction. Together with the order row it writes an ``OrderChange``
row, so the change cannot be lost, and asks for a matching cycle only after commit.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from exchange.errors import InvalidInput, NotAllowed, NotFound, StaleVersion
from exchange.market_rules import OrderConstraint, Side, order_constraint
from exchange.models import BestOffer, Bid, Market, Offer, OrderChange
from exchange.selectors.markets import market_schema
from exchange.services.notifications import offer_event
from exchange.services.side_effects import after_commit


def _rules(market: Market, side: Side, constraint: Any) -> OrderConstraint:
    return order_constraint(
        schema=market_schema(market=market), tick=market.tick, side=side, source=constraint
    )


def order_changed(side: str, order_id: int) -> None:
    """Record the change for the matching cycle and trigger one after commit."""
    from exchange.tasks import matching_cycle_request

    OrderChange.objects.create(side=side, order_id=order_id)
    after_commit("triggering a matching cycle", matching_cycle_request)


def _check_closes_at(closes_at: dt.datetime | None) -> None:
    if closes_at is None:
        return
    if timezone.is_naive(closes_at):
        raise InvalidInput(
            "invalid_closes_at",
            "closes_at needs a time zone, e.g. 2026-12-01T12:00:00Z.",
            field="closes_at",
        )
    if closes_at <= timezone.now():
        raise InvalidInput(
            "invalid_closes_at", "closes_at must be in the future.", field="closes_at"
        )


def offer_publish(
    *,
    seller: AbstractBaseUser,
    market: Market,
    constraint: Any,
    closes_at: dt.datetime | None = None,
) -> Offer:
    """Publish a seller's offer (a publication) in ``market``."""
    rules = _rules(market, "offer", constraint)
    _check_closes_at(closes_at)
    with transaction.atomic():
        offer = Offer.objects.create(
            market=market,
            seller=seller,
            constraint_text=rules.text,
            constraint_json=rules.json,
            closes_at=closes_at,
        )
        BestOffer.objects.create(offer=offer, changed_at=offer.created_at)
        order_changed("offer", offer.pk)
        offer_event(offer)
    return offer


def bid_place(*, buyer: AbstractBaseUser, market: Market, constraint: Any) -> Bid:
    """Place a buyer's bid (a subscription) in ``market``."""
    rules = _rules(market, "bid", constraint)
    with transaction.atomic():
        bid = Bid.objects.create(
            market=market, buyer=buyer, constraint_text=rules.text, constraint_json=rules.json
        )
        order_changed("bid", bid.pk)
    return bid


def _locked(model: type[Offer] | type[Bid], order_id: int) -> Offer | Bid:
    try:
        return (
            model.objects.select_for_update(no_key=True, of=("self",))
            .select_related("market")
            .get(pk=order_id)
        )
    except model.DoesNotExist:
        raise NotFound("not_found", f"There is no {model.__name__.lower()} {order_id}.") from None


def _owned(order: Offer | Bid, user: AbstractBaseUser) -> None:
    owner_id = order.seller_id if isinstance(order, Offer) else order.buyer_id
    if owner_id != user.pk:
        raise NotAllowed("not_owner", "Only the one who placed it can change it.")


def _live(order: Offer | Bid) -> None:
    live = Offer.State.OPEN if isinstance(order, Offer) else Bid.State.ACTIVE
    if order.state != live:
        kind = type(order).__name__.lower()
        raise InvalidInput(
            "not_" + live, f"This {kind} is {order.state}; only {live} {kind}s can change."
        )


def _version(order: Offer | Bid, version: Any) -> None:
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidInput(
            "invalid_version",
            "Send the version you are amending (a whole number).",
            field="version",
        )
    if version != order.version:
        raise StaleVersion(
            "stale_version",
            f"This order is at version {order.version}, not {version}: reload it and amend again.",
            field="version",
        )


def offer_amend(*, seller: AbstractBaseUser, offer_id: int, constraint: Any, version: Any) -> Offer:
    """Replace an open offer's constraint; ``version`` must be the current one (else 409)."""
    with transaction.atomic():
        offer = _locked(Offer, offer_id)
        _owned(offer, seller)
        _live(offer)
        _version(offer, version)
        rules = _rules(offer.market, "offer", constraint)
        offer.constraint_text, offer.constraint_json = rules.text, rules.json
        offer.version = F("version") + 1
        offer.save(update_fields=["constraint_text", "constraint_json", "version", "updated_at"])
        order_changed("offer", offer.pk)
        offer.refresh_from_db()
        offer_event(offer)
    return offer


def bid_amend(*, buyer: AbstractBaseUser, bid_id: int, constraint: Any, version: Any) -> Bid:
    """Replace an active bid's constraint; ``version`` must be the current one (else 409)."""
    with transaction.atomic():
        bid = _locked(Bid, bid_id)
        _owned(bid, buyer)
        _live(bid)
        _version(bid, version)
        rules = _rules(bid.market, "bid", constraint)
        bid.constraint_text, bid.constraint_json = rules.text, rules.json
        bid.version = F("version") + 1
        bid.priority_at = timezone.now()
        bid.save(
            update_fields=[
                "constraint_text",
                "constraint_json",
                "version",
                "priority_at",
                "updated_at",
            ]
        )
        order_changed("bid", bid.pk)
    bid.refresh_from_db()
    return bid


def offer_withdraw(*, seller: AbstractBaseUser, offer_id: int) -> Offer:
    with transaction.atomic():
        offer = _locked(Offer, offer_id)
        _owned(offer, seller)
        if offer.state == Offer.State.WITHDRAWN:
            return offer  # withdrawing twice changes nothing
        _live(offer)
        offer.state = Offer.State.WITHDRAWN
        offer.save(update_fields=["state", "updated_at"])
        order_changed("offer", offer.pk)
        offer_event(offer)
    return offer


def offer_cancel(*, staff: AbstractBaseUser, offer_id: int) -> Offer:
    """Staff cancel an open offer (no trade)."""
    if not staff.is_staff:
        raise NotAllowed("staff_only", "Only staff can cancel an offer.")
    with transaction.atomic():
        offer = _locked(Offer, offer_id)
        if offer.state == Offer.State.CANCELLED:
            return offer
        _live(offer)
        offer.state = Offer.State.CANCELLED
        offer.save(update_fields=["state", "updated_at"])
        order_changed("offer", offer.pk)
        offer_event(offer)
    return offer


def bid_withdraw(*, buyer: AbstractBaseUser, bid_id: int) -> Bid:
    with transaction.atomic():
        bid = _locked(Bid, bid_id)
        _owned(bid, buyer)
        if bid.state == Bid.State.WITHDRAWN:
            return bid
        _live(bid)
        bid.state = Bid.State.WITHDRAWN
        bid.save(update_fields=["state", "updated_at"])
        order_changed("bid", bid.pk)
    return bid
