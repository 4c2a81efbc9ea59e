"""The notification outbox: which rows a change writes, and pushing them after commit.

Every outbox row builder lives here (best bids, trades, orders set aside, offer events), so
the matching cycle and closing write the same rows for the same events.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING

from django.utils import timezone

from exchange.market_rules import price_text
from exchange.models import Bid, Notification, Offer, Trade
from exchange.services.side_effects import after_commit

if TYPE_CHECKING:
    from exchange.services.matching import Best


def decimal_text(value: Decimal | None) -> str | None:
    """A decimal without trailing zeros when it is whole (``5000``, ``2.5``), None for None."""
    return (
        None
        if value is None
        else format(value.normalize() if value == value.to_integral() else value, "f")
    )


def best_offer_notifications(*, offer: Offer, old: Best, new: Best) -> list[Notification]:
    """The outbox rows for a change of ``offer``'s best bid (SPEC 5.4).

    When the best bid or its value changed: the seller, the new best bidder, the bidder who
    lost the top place, and the market. When only the number of matching bids changed: the
    market alone (its pages show the count).
    """
    market = offer.market
    public = {
        "offer": offer.pk,
        "market": market.subject,
        "best_value": price_text(new.value, market.tick),
        "matching_bids": new.matching_bids,
        "state": offer.state,
    }
    notes = [
        Notification(market=market, offer=offer, recipient=None, type="best_offer", data=public)
    ]
    if (old.bid_id, old.value) == (new.bid_id, new.value):
        return notes
    notes.append(
        Notification(
            market=market,
            offer=offer,
            recipient_id=offer.seller_id,
            type="best_offer",
            data={**public, "previous_value": price_text(old.value, market.tick)},
        )
    )
    buyers = dict(
        Bid.objects.filter(id__in=[b for b in (old.bid_id, new.bid_id) if b]).values_list(
            "id", "buyer_id"
        )
    )
    if new.bid_id is not None:
        notes.append(
            Notification(
                market=market,
                offer=offer,
                recipient_id=buyers[new.bid_id],
                type="best_bid",
                data={**public, "bid": new.bid_id, "status": "best"},
            )
        )
    if old.bid_id is not None and old.bid_id != new.bid_id and old.bid_id in buyers:
        if offer.state == Offer.State.OPEN:
            kind, status = "outbid", "outbid"
        elif Trade.objects.filter(offer=offer, bid_id=old.bid_id).exists():
            return notes  # the winner hears of its trade instead
        else:
            kind, status = "offer_ended", offer.state
        notes.append(
            Notification(
                market=market,
                offer=offer,
                recipient_id=buyers[old.bid_id],
                type=kind,
                data={**public, "bid": old.bid_id, "status": status},
            )
        )
    return notes


def trade_notifications(*, offer: Offer, trade: Trade | None) -> list[Notification]:
    """The outbox rows for a closed auction: public and the seller's, plus the buyer's on a
    trade (the agreed constraint and the buyer's name only for the parties)."""
    data = {
        "offer": offer.pk,
        "market": offer.market.subject,
        "state": offer.state,
        "sold": trade is not None,
    }
    # (recipient id or None for the public row, data) for each row, all of one type.
    rows: list[tuple[int | None, dict[str, object]]]
    if trade is None:
        kind, rows = "offer", [(None, data), (offer.seller_id, data)]
    else:
        public = {
            **data,
            "trade": trade.pk,
            "price": price_text(trade.price, offer.market.tick),
            "quantity": decimal_text(trade.quantity),
        }
        private = {**public, "bid": trade.bid_id, "agreed_constraint": trade.agreed_constraint}
        kind = "trade"
        rows = [
            (None, public),
            (trade.seller_id, {**private, "buyer": trade.buyer.get_username()}),
            (trade.buyer_id, private),
        ]
    return Notification.objects.bulk_create(
        [
            Notification(
                market=offer.market, offer=offer, recipient_id=recipient, type=kind, data=row
            )
            for recipient, row in rows
        ]
    )


def set_aside_notifications(*, orders: Iterable[Offer | Bid]) -> list[Notification]:
    """One personal ``set_aside`` row per order the engine had to leave out, for its owner:
    which order, why, and that amending or withdrawing it is the way out."""
    notes = []
    for order in orders:
        offer: Offer | None
        if isinstance(order, Offer):
            kind, offer, owner_id = "offer", order, order.seller_id
        else:
            kind, offer, owner_id = "bid", None, order.buyer_id
        notes.append(
            Notification(
                market=order.market,
                offer=offer,
                recipient_id=owner_id,
                type="set_aside",
                data={
                    kind: order.pk,
                    "market": order.market.subject,
                    "state": order.state,
                    "reason": order.set_aside_reason,
                    "message": f"Your {kind} {order.pk} is left out of matching because "
                    f"{order.set_aside_reason}. Amend it or withdraw it.",
                },
            )
        )
    return Notification.objects.bulk_create(notes)


def offer_event(offer: Offer) -> None:
    """A public ``offer`` event: an offer was posted, amended, withdrawn or cancelled."""
    note = Notification.objects.create(
        market=offer.market,
        offer=offer,
        type="offer",
        data={
            "offer": offer.pk,
            "market": offer.market.subject,
            "state": offer.state,
            "version": offer.version,
            "constraint": offer.constraint_text,
        },
    )
    notifications_push_on_commit([note])


def notifications_push_on_commit(notes: Iterable[Notification]) -> None:
    """After commit, push the rows over Channels (a beat sweep pushes what a crash left)."""
    ids = [n.pk for n in notes]
    if ids:
        after_commit("pushing notifications", lambda: notifications_push(ids=ids))


def notifications_push(*, ids: list[int] | None = None) -> int:
    """Push undelivered notifications (the given ones, or all) in id order; mark them delivered.

    Public rows go to the market's and the offer's streams (and so to the market patterns
    that match the market's subject, ``exchange/realtime/patterns.py``); personal rows wake the
    recipient's connections, which then read their notifications from the outbox.
    """
    from exchange.realtime.streams import group_send_all, public_messages, wake_message

    pending = Notification.objects.filter(delivered_at=None).select_related("market").order_by("id")
    if ids is not None:
        pending = pending.filter(id__in=ids)
    notes = list(pending[:5000])
    messages = []
    woken: dict[int, int] = {}
    for note in notes:
        if note.recipient_id is None:
            streams = [f"market:{note.market.subject}"]
            if note.offer_id is not None:
                streams.append(f"offer:{note.offer_id}")
            for stream in streams:
                messages += public_messages(
                    stream=stream, type=note.type, seq=note.pk, data=note.data
                )
        else:
            woken[note.recipient_id] = max(woken.get(note.recipient_id, 0), note.pk)
    messages += [wake_message(user_id=user_id, seq=seq) for user_id, seq in woken.items()]
    group_send_all(messages)
    if notes:
        Notification.objects.filter(pk__in=[n.pk for n in notes], delivered_at=None).update(
            delivered_at=timezone.now()
        )
    return len(notes)


def notifications_sweep(*, older_than: dt.timedelta) -> int:
    """Push the notifications a crash or an outage left undelivered for ``older_than``
    (younger ones are still on their way after their commit); returns how many."""
    stale = timezone.now() - older_than
    ids = list(
        Notification.objects.filter(delivered_at=None, created_at__lte=stale)
        .order_by("id")
        .values_list("id", flat=True)[:5000]
    )
    return notifications_push(ids=ids) if ids else 0
