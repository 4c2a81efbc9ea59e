"""Closing auctions into trades (SPEC 5.5).

One service for the admin console, the API and the beat task. Closing runs under the matching
cycle's lock and first takes in every pending change, so the winner is the best bid at that
very moment.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from decimal import Decimal

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, OuterRef, Subquery
from django.utils import timezone

from exchange import engine
from exchange.engine.constraints import market_schema_of
from exchange.errors import InvalidInput, NotAllowed, NotFound
from exchange.market_rules import numeric_value
from exchange.models import (
    BestOffer,
    Bid,
    BidOutcome,
    Market,
    Notification,
    Offer,
    OfferBidMatch,
    Trade,
)
from exchange.numbers import price_text
from exchange.selectors.limits import buyer_room, buyer_rooms
from exchange.services.events import closing_events, events_append
from exchange.services.matching import (
    STALLED_RETRIES,
    apply_changes,
    best_offers_refresh,
    cycle_lock,
    pending_changes_apply,
    tail_lock,
)
from exchange.services.notifications import (
    notifications_push_on_commit,
    outcome_notifications,
    trade_notifications,
)
from matching import Agreement
from matching.model import Attribute, Disjunct


@dataclass(frozen=True)
class CloseResult:
    offer: Offer
    trade: Trade | None

    @property
    def state(self) -> str:
        return self.offer.state


@dataclass(frozen=True)
class Preview:
    """What closing now would do: the winner-to-be and the price (for the confirmation page).

    ``unusable`` says why no terms can be computed when the offer or its best bid holds a
    constraint the engine cannot use (closing would set it aside and look again);
    ``over_limit`` that closing would pass the best bid over for its buyer's limit.
    """

    offer: Offer
    bid: Bid | None
    value: Decimal | None
    price: Decimal | None
    quantity: Decimal | None
    agreement: Agreement | None
    unusable: str | None = None
    # The trade would go past its buyer's spending limit: closing would pass this bid over
    # and look for the next one that fits.
    over_limit: bool = False

    @property
    def agreed_constraint(self) -> str | None:
        return None if self.agreement is None else self.agreement.to_text()

    @property
    def value_text(self) -> str | None:
        return price_text(self.value, self.offer.market.tick)

    @property
    def price_text(self) -> str | None:
        return price_text(self.price, self.offer.market.tick)


def _terms_each(offers: list[Offer]) -> dict[int, Preview | engine.UnusableOrders]:
    """The winner and the trade terms of each offer (its market loaded) from the current
    best-offer table and matches, in a fixed number of queries however many offers (the
    staff dashboard previews every open auction). An offer whose own or best bid's stored
    constraint cannot be used maps to the ``UnusableOrders`` naming them."""
    # For second-price auctions: the best value among the offer's other matching bids.
    runner_up = (
        OfferBidMatch.objects.filter(offer_id=OuterRef("offer_id"))
        .exclude(bid_id=OuterRef("bid_id"))
        .order_by("-value")
        .values("value")[:1]
    )
    bests = {
        best.offer_id: best
        for best in BestOffer.objects.filter(offer__in=offers, bid__isnull=False)
        .select_related("bid__buyer")
        .annotate(runner_up=Subquery(runner_up))
    }
    matches = list(
        OfferBidMatch.objects.filter(offer_id__in=bests, bid_id=F("offer__best__bid_id"))
    )
    values = {(m.offer_id, m.bid_id): m.value for m in matches}
    agreements = engine.pair_agreements(matches)
    out: dict[int, Preview | engine.UnusableOrders] = {}
    for offer in offers:
        best = bests.get(offer.pk)
        if best is None or best.bid is None:
            out[offer.pk] = Preview(offer, None, None, None, None, None)
            continue
        found = agreements[(offer.pk, best.bid.pk)]
        if isinstance(found, engine.UnusableOrders):
            out[offer.pk] = found
            continue
        value = values[(offer.pk, best.bid.pk)]
        runner_up = best.runner_up
        out[offer.pk] = _preview(offer, best.bid, runner_up, value, *found)
    return out


def _preview(
    offer: Offer,
    bid: Bid,
    second: Decimal | None,
    value: Decimal,
    agreement: Agreement,
    dp: Disjunct,
    price_attribute: Attribute,
) -> Preview:
    """The terms of ``offer`` won by ``bid``, whose match is worth ``value``; ``second`` is
    the best value among the other bids in the auction (for second-price pricing)."""
    market: Market = offer.market
    if market.pricing == Market.Pricing.SECOND:
        low = engine.price_interval(dp, price_attribute).lo
        reserve = numeric_value(low) if low else Decimal(0)
        price = reserve if second is None else max(reserve, second + market.tick)
        price = min(price, value)
    else:
        price = value
    quantity_spec = market_schema_of(market).by_role("quantity")
    quantity = None
    if quantity_spec is not None:
        top = agreement.max_value(quantity_spec.attribute)
        quantity = None if top is None else numeric_value(top)
    return Preview(offer, bid, value, price, quantity, agreement)


def _terms(offer: Offer) -> Preview:
    """``_terms_each`` of one offer; raises ``engine.UnusableOrders`` if the offer or its
    best bid cannot be used."""
    found = _terms_each([offer])[offer.pk]
    if isinstance(found, engine.UnusableOrders):
        raise found
    return found


def _settled_terms(offer: Offer) -> tuple[Preview, list[Notification]]:
    """``_terms`` once the orders it finds unusable are set aside and the book recomputed
    without them (a poisoned best bid gives way to the next one). Needs the cycle lock."""
    notes: list[Notification] = []
    stalled = 0
    while True:
        try:
            return _terms(offer), notes
        except engine.UnusableOrders as exc:
            applied = apply_changes(offer_ids=set(exc.offers), bid_ids=set(exc.bids))
            notes += applied.notes
            if not applied.set_aside:
                # usable when read again under lock (amended meanwhile): the changes were
                # applied, so the next read sees the new text; give up after a few tries
                stalled += 1
                if stalled > STALLED_RETRIES:
                    raise


@dataclass(frozen=True)
class _Passed:
    """A bid passed over at closing: its award would have gone past its buyer's limit."""

    bid_id: int
    total: Decimal | None
    remaining: Decimal


def _trade_total(terms: Preview) -> Decimal | None:
    """What the trade would cost its buyer: price times quantity; None (unbounded) when the
    market has a quantity and the agreement bounds none; the price alone in a market
    without a quantity."""
    assert terms.price is not None
    if terms.quantity is not None:
        return terms.price * terms.quantity
    if market_schema_of(terms.offer.market).by_role("quantity") is not None:
        return None
    return terms.price


def _eligible_terms(offer: Offer, terms: Preview) -> tuple[Preview, list[_Passed]]:
    """``terms`` if its bid's buyer can afford the trade (``exchange.services.limits``), else
    the terms with the next bid in the book's order (value, then priority, then id) that
    can, the ones passed over taken out of the auction (a second price comes from the bids
    still in it). Locks each bid it looks at, then its buyer. Needs the cycle lock."""
    passed: list[_Passed] = []
    while terms.bid is not None:
        Bid.objects.select_for_update(no_key=True).filter(pk=terms.bid.pk).values_list("pk").first()
        room = buyer_room(buyer_id=terms.bid.buyer_id, other_than=terms.bid.pk, lock=True)
        total = _trade_total(terms)
        if total is not None and total <= room.remaining:
            break
        passed.append(_Passed(terms.bid.pk, total, room.remaining))
        terms = _next_terms(offer, {p.bid_id for p in passed})
    return terms, passed


def _next_terms(offer: Offer, out: set[int]) -> Preview:
    """The terms of ``offer`` with its best bid among those not ``out`` (no bid: unsold).
    A bid whose stored constraint cannot be used is left out too (the next cycle sets it
    aside)."""
    ranked = list(
        OfferBidMatch.objects.filter(offer=offer, bid__set_aside_at=None)
        .exclude(bid_id__in=out)
        .select_related("bid")
        .order_by("-value", "bid__priority_at", "bid_id")
    )
    for i, match in enumerate(ranked):
        found = engine.pair_agreements([match])[(offer.pk, match.bid_id)]
        if isinstance(found, engine.UnusableOrders):
            continue
        # the second price comes from the bids ranked after the winner (docs/api.md)
        second = max((m.value for m in ranked[i + 1 :]), default=None)
        return _preview(offer, match.bid, second, match.value, *found)
    return Preview(offer, None, None, None, None, None)


def _outcomes(
    offer: Offer, trade: Trade | None, passed: list[_Passed], now: dt.datetime
) -> tuple[list[BidOutcome], dict[int, int]]:
    """One ``BidOutcome`` per bid that matched ``offer`` (read before its matches go), and
    each of those bids' buyer."""
    matches = list(
        OfferBidMatch.objects.filter(offer=offer)
        .order_by("-value", "bid__priority_at", "bid_id")
        .values_list("bid_id", "value", "bid__buyer_id")
    )
    over = {p.bid_id: p for p in passed}
    price = None if trade is None else trade.price
    rows = []
    for bid_id, value, _ in matches:
        if trade is not None and bid_id == trade.bid_id:
            row = BidOutcome(result=BidOutcome.Result.WON, total=_total(trade))
        elif bid_id in over:
            row = BidOutcome(
                result=BidOutcome.Result.OVER_LIMIT,
                total=over[bid_id].total,
                remaining=over[bid_id].remaining,
            )
        else:
            row = BidOutcome(result=BidOutcome.Result.LOST)
        row.bid_id, row.offer, row.price, row.value, row.at = bid_id, offer, price, value, now
        rows.append(row)
    return BidOutcome.objects.bulk_create(rows), {b: buyer for b, _, buyer in matches}


def _total(trade: Trade) -> Decimal | None:
    return None if trade.quantity is None else trade.price * trade.quantity


def offer_close_previews(*, offers: list[Offer]) -> list[Preview]:
    """What closing each of ``offers`` (their markets loaded) now would do, in their order and
    in a fixed number of queries. An offer whose own or best bid's constraint cannot be used
    gets ``unusable`` with the reasons (closing would set those aside and look again)."""
    terms = _terms_each(offers)
    previews = []
    for offer in offers:
        found = terms[offer.pk]
        if isinstance(found, engine.UnusableOrders):
            reasons = [*found.offers.values(), *found.bids.values()]
            found = Preview(offer, None, None, None, None, None, unusable="; ".join(reasons))
        previews.append(found)
    return _limits_marked(previews)


def _limits_marked(previews: list[Preview]) -> list[Preview]:
    """``previews`` with ``over_limit`` set where the best bid's trade would go past its
    buyer's remaining limit (its own commitment not counted), as closing checks it."""
    rooms = buyer_rooms(buyer_ids={p.bid.buyer_id for p in previews if p.bid is not None})
    marked = []
    for p in previews:
        if p.bid is not None:
            room = rooms[p.bid.buyer_id]
            remaining = room.remaining + (p.bid.largest_award or 0)
            total = _trade_total(p)
            p = replace(p, over_limit=total is None or total > remaining)
        marked.append(p)
    return marked


def offer_close_preview(*, offer_id: int) -> Preview:
    offer = Offer.objects.select_related("market").filter(pk=offer_id).first()
    if offer is None:
        raise NotFound("not_found", f"There is no offer {offer_id}.")
    return offer_close_previews(offers=[offer])[0]


def offer_close(*, offer_id: int, staff: User | None) -> CloseResult:
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
        notes = pending_changes_apply()
        terms, aside = _settled_terms(offer)
        notes += aside
        terms, passed = _eligible_terms(offer, terms)
        events_append()  # best-offer changes of orders set aside while settling
        now = timezone.now()
        trade = None
        offer.state = Offer.State.CLOSED
        offer.save(update_fields=["state", "updated_at"])
        touched = {offer.pk}
        if terms.bid is not None:
            bid = Bid.objects.get(pk=terms.bid.pk)  # locked by _eligible_terms
            bid.state = Bid.State.FILLED
            bid.save(update_fields=["state", "updated_at"])
            # A best bid always comes with its agreement and its price.
            assert terms.agreement is not None and terms.price is not None
            trade = Trade.objects.create(
                offer=offer,
                bid=bid,
                market=offer.market,
                seller_id=offer.seller_id,
                buyer_id=bid.buyer_id,
                price=terms.price,
                quantity=terms.quantity,
                pricing=offer.market.pricing,
                agreed_constraint=terms.agreement.to_text(),
                agreed_constraint_json=terms.agreement.to_json(),
                closed_at=now,
            )
            # The filled bid leaves every other offer it matched; those are recomputed.
            touched |= set(OfferBidMatch.objects.filter(bid=bid).values_list("offer_id", flat=True))
            engine.store().delete_subscriptions([bid.pk])
        outcomes, buyers = _outcomes(offer, trade, passed, now)
        engine.store().delete_publications([offer.pk])
        OfferBidMatch.objects.filter(offer=offer).delete()
        if trade is not None:
            OfferBidMatch.objects.filter(bid_id=trade.bid_id).delete()
        notes += best_offers_refresh(offer_ids=touched)
        events_append(closed=closing_events(offer=offer, trade=trade))
        # The parties' rows under the tail lock (``best_offers_refresh`` took it if it
        # wrote anything; an offer that had no best bid did not), as every writer of
        # personal rows takes it. Uncontended: everyone else who takes the tail (cycles,
        # staff cancels) holds the cycle lock shared, so none runs beside a close; that is
        # also why a close may take order rows after the tail (its later batches set orders
        # aside, ``_eligible_terms`` locks bids and buyers) without a deadlock.
        tail_lock()
        notes += trade_notifications(offer=offer, trade=trade)
        notes += outcome_notifications(offer=offer, trade=trade, outcomes=outcomes, buyers=buyers)
        notifications_push_on_commit(notes)
    return CloseResult(offer, trade)


def offers_close_due(*, now: dt.datetime | None = None, limit: int = 100) -> list[CloseResult]:
    """Close open offers whose ``closes_at`` has passed (the beat task), oldest first."""
    now = now or timezone.now()
    due = list(
        Offer.objects.filter(state=Offer.State.OPEN, closes_at__lte=now)
        .order_by("closes_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    return [offer_close(offer_id=pk, staff=None) for pk in due]
