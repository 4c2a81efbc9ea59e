"""Closing auctions into trades (SPEC 5.5).

One service for the admin console, the API and the beat task. Closing runs under the matching
cycle's lock and first takes in every pending change, so the winner is the best bid at that
very moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

import matching
from exchange import engine
from exchange.errors import InvalidInput, NotAllowed, NotFound
from exchange.market_rules import price_text
from exchange.models import (
    BestOffer,
    Bid,
    Market,
    Notification,
    Offer,
    OfferBidMatch,
    OrderChange,
    Trade,
)
from exchange.services.matching import apply_changes, best_offers_refresh, cycle_lock
from exchange.services.notifications import decimal_text, notifications_push_on_commit


@dataclass(frozen=True)
class CloseResult:
    offer: Offer
    trade: Trade | None

    @property
    def state(self) -> str:
        return self.offer.state


@dataclass(frozen=True)
class Preview:
    """What closing now would do: the winner-to-be and the price (for the confirmation page)."""

    offer: Offer
    bid: Bid | None
    value: Decimal | None
    price: Decimal | None
    quantity: Decimal | None
    agreed_constraint: str | None


def _take_pending_changes() -> list[Notification]:
    pending = list(
        OrderChange.objects.filter(processed_at=None).values_list("id", "side", "order_id")
    )
    if not pending:
        return []
    _, notes = apply_changes(
        offer_ids={o for _, side, o in pending if side == "offer"},
        bid_ids={o for _, side, o in pending if side == "bid"},
    )
    OrderChange.objects.filter(id__in=[row[0] for row in pending]).update(
        processed_at=timezone.now()
    )
    return notes


def _terms(offer: Offer) -> Preview:
    """The winner and the trade terms from the current best-offer table and matches."""
    best = BestOffer.objects.filter(offer=offer).select_related("bid").first()
    if best is None or best.bid is None:
        return Preview(offer, None, None, None, None, None)
    market: Market = offer.market
    match = OfferBidMatch.objects.get(offer=offer, bid=best.bid)
    constraints = engine.constraints(Offer, {offer.pk})
    pub, price_attr = constraints[offer.pk]
    sub, _ = engine.constraints(Bid, {best.bid_id})[best.bid_id]
    dp, ds = pub.disjuncts[match.pub_disjunct], sub.disjuncts[match.sub_disjunct]
    agreement = matching.agree(dp, ds)
    value = match.value
    if market.pricing == Market.Pricing.SECOND:
        reserve = engine.price_interval(dp, price_attr).lo or Decimal(0)
        second = (
            OfferBidMatch.objects.filter(offer=offer)
            .exclude(bid=best.bid)
            .order_by("-value")
            .values_list("value", flat=True)
            .first()
        )
        price = reserve if second is None else max(reserve, second + market.tick)
        price = min(price, value)
    else:
        price = value
    quantity_attr = engine.quantity_attribute(market)
    quantity = None
    if quantity_attr is not None:
        top = agreement.max_value(quantity_attr)
        quantity = None if top is None else Decimal(top)
    return Preview(offer, best.bid, value, price, quantity, agreement.to_text())


def offer_close_preview(*, offer_id: int) -> Preview:
    offer = Offer.objects.select_related("market").filter(pk=offer_id).first()
    if offer is None:
        raise NotFound("not_found", f"There is no offer {offer_id}.")
    return _terms(offer)


def offer_close(*, offer_id: int, staff: AbstractBaseUser | None) -> CloseResult:
    """Close an offer: a trade with its best bid, or unsold. ``staff=None`` is the scheduler.

    Closing twice returns the first result and changes nothing.
    """
    if staff is not None and not staff.is_staff:
        raise NotAllowed("staff_only", "Only staff can close an auction.")
    with transaction.atomic():
        cycle_lock()
        offer = (
            Offer.objects.select_for_update(no_key=True, of=("self",))
            .select_related("market")
            .filter(pk=offer_id)
            .first()
        )
        if offer is None:
            raise NotFound("not_found", f"There is no offer {offer_id}.")
        if offer.state == Offer.State.CLOSED:
            return CloseResult(offer, Trade.objects.filter(offer=offer).first())
        if offer.state != Offer.State.OPEN:
            raise InvalidInput("not_open", f"This offer is {offer.state}; only open offers close.")
        notes = _take_pending_changes()
        terms = _terms(offer)
        now = timezone.now()
        trade = None
        offer.state = Offer.State.CLOSED
        offer.save(update_fields=["state", "updated_at"])
        touched = {offer.pk}
        if terms.bid is not None:
            bid = Bid.objects.select_for_update(no_key=True).get(pk=terms.bid.pk)
            bid.state = Bid.State.FILLED
            bid.save(update_fields=["state", "updated_at"])
            agreement = terms.agreed_constraint or ""
            trade = Trade.objects.create(
                offer=offer,
                bid=bid,
                market=offer.market,
                seller_id=offer.seller_id,
                buyer_id=bid.buyer_id,
                price=terms.price,
                quantity=terms.quantity,
                pricing=offer.market.pricing,
                agreed_constraint=agreement,
                agreed_constraint_json=_agreement_json(offer, bid),
                closed_at=now,
            )
            # The filled bid leaves every other offer it matched; those are recomputed.
            touched |= set(OfferBidMatch.objects.filter(bid=bid).values_list("offer_id", flat=True))
            engine.store().delete_subscriptions([bid.pk])
        engine.store().delete_publications([offer.pk])
        OfferBidMatch.objects.filter(offer=offer).delete()
        if trade is not None:
            OfferBidMatch.objects.filter(bid_id=trade.bid_id).delete()
        notes += best_offers_refresh(offer_ids=touched)
        notes += _trade_notifications(offer, trade)
        notifications_push_on_commit(notes)
    return CloseResult(offer, trade)


def _agreement_json(offer: Offer, bid: Bid) -> dict:
    match = OfferBidMatch.objects.get(offer=offer, bid=bid)
    pub, _ = engine.constraints(Offer, {offer.pk})[offer.pk]
    sub, _ = engine.constraints(Bid, {bid.pk})[bid.pk]
    return matching.agree(
        pub.disjuncts[match.pub_disjunct], sub.disjuncts[match.sub_disjunct]
    ).to_json()


def _trade_notifications(offer: Offer, trade: Trade | None) -> list[Notification]:
    data = {
        "offer": offer.pk,
        "market": offer.market.subject,
        "state": offer.state,
        "sold": trade is not None,
    }
    if trade is None:
        return Notification.objects.bulk_create(
            [
                Notification(market=offer.market, offer=offer, type="offer", data=data),
                Notification(
                    market=offer.market,
                    offer=offer,
                    recipient_id=offer.seller_id,
                    type="offer",
                    data=data,
                ),
            ]
        )
    public = {
        **data,
        "trade": trade.pk,
        "price": price_text(trade.price, offer.market.tick),
        "quantity": decimal_text(trade.quantity),
    }
    private = {**public, "bid": trade.bid_id, "agreed_constraint": trade.agreed_constraint}
    return Notification.objects.bulk_create(
        [
            Notification(market=offer.market, offer=offer, type="trade", data=public),
            Notification(
                market=offer.market,
                offer=offer,
                recipient_id=trade.seller_id,
                type="trade",
                data={**private, "buyer": trade.buyer.get_username()},
            ),
            Notification(
                market=offer.market,
                offer=offer,
                recipient_id=trade.buyer_id,
                type="trade",
                data=private,
            ),
        ]
    )


def offers_close_due(*, now=None, limit: int = 100) -> list[CloseResult]:
    """Close open offers whose ``closes_at`` has passed (the beat task), oldest first."""
    now = now or timezone.now()
    due = list(
        Offer.objects.filter(state=Offer.State.OPEN, closes_at__lte=now)
        .order_by("closes_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    return [offer_close(offer_id=pk, staff=None) for pk in due]
