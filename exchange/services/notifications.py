"""The notification outbox: which rows a change writes, and pushing them after commit.

Every outbox row builder lives here (best bids, trades, orders set aside, offer events), so
the matching cycle and closing write the same rows for the same events.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import connection, router
from django.utils import timezone

import matching
from exchange.engine.constraints import market_schema_of
from exchange.market_rules import MarketSchema, fixed_price
from exchange.memo import short_text_cache
from exchange.models import Bid, BidOutcome, Notification, Offer, OfferBidMatch, Trade
from exchange.numbers import number_text, price_text
from exchange.realtime import streams as realtime
from exchange.services.best import Best
from exchange.services.side_effects import after_commit


def _pricing(offer: Offer, schema: MarketSchema) -> str:
    """The offer's pricing rule as its notifications name it: ``fixed`` (a fixed price,
    first come first served), else the market's auction rule (``first`` or ``second``). An
    offer whose stored text no longer reads counts as an auction. ``schema`` is its
    market's."""
    return "fixed" if _fixed_price(offer.constraint_text, schema) else offer.market.pricing


@short_text_cache(maxsize=50_000)
def _fixed_price(text: str, schema: MarketSchema) -> bool:
    """Whether the offer text ``text`` fixes its price under ``schema`` (False when it does
    not parse). Cached: parsing it was a tenth of a cycle's notifications (issue 36), and a
    busy offer's best bid changes cycle after cycle with the same text."""
    try:
        constraint = matching.parse(text, schema=schema.types)
    except matching.ConstraintError:
        return False
    return fixed_price(constraint, schema)


def _personal(offer: Offer) -> dict[str, object]:
    """What every personal row about ``offer`` adds for its sentence: the pricing rule
    (``_pricing``) and the units of price and quantity (empty when the schema names
    none)."""
    schema = market_schema_of(offer.market)
    quantity = schema.by_role("quantity")
    return {
        "pricing": _pricing(offer, schema),
        "unit": schema.price.unit,
        "quantity_unit": quantity.unit if quantity is not None else "",
    }


@dataclass(frozen=True)
class BestFacts:
    """What the rows of a batch of best-bid changes need to know beyond the changes themselves,
    read in two statements for the whole batch (``best_offer_facts``) rather than two per
    changed offer: that per-offer pair was 40% of a matching cycle under the live benchmark's
    load (issue 17).

    ``bids``: buyer, state and set-aside time of every old and new best bid; ``values``: the
    match value of each (offer, former best bid) pair still matching.
    """

    bids: dict[int, tuple[int, str, dt.datetime | None]]
    values: dict[tuple[int, int], Decimal]


def best_offer_facts(changes: Sequence[tuple[Offer, Best, Best]]) -> BestFacts:
    """The facts the rows of ``changes`` (offer, old best, new best) need; see ``BestFacts``."""
    moved = [
        (o, old, new)
        for o, old, new in changes
        if (old.bid_id, old.value) != (new.bid_id, new.value)
    ]
    bid_ids = {b for _, old, new in moved for b in (old.bid_id, new.bid_id) if b is not None}
    bids: dict[int, tuple[int, str, dt.datetime | None]] = {}
    if bid_ids:
        # Written out rather than built and compiled by the ORM per cycle (issue 36).
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, buyer_id, state, set_aside_at FROM {Bid._meta.db_table}"
                " WHERE id = ANY(%s)",
                [sorted(bid_ids)],
            )
            bids = {row[0]: row[1:] for row in cursor.fetchall()}
    pairs = [
        (o.pk, old.bid_id)
        for o, old, new in moved
        if o.state == Offer.State.OPEN and old.bid_id is not None and old.bid_id != new.bid_id
    ]
    values: dict[tuple[int, int], Decimal] = {}
    if pairs:
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT m.offer_id, m.bid_id, m.value
                FROM {OfferBidMatch._meta.db_table} m
                JOIN unnest(%s::bigint[], %s::bigint[]) AS p(offer_id, bid_id)
                  ON m.offer_id = p.offer_id AND m.bid_id = p.bid_id
                """,
                [[p[0] for p in pairs], [p[1] for p in pairs]],
            )
            values = {(o, b): v for o, b, v in cursor.fetchall()}
    return BestFacts(bids=bids, values=values)


# What ``best_offer_notifications`` reads of an offer and of its market (attribute names;
# with the ids): the matching cycle loads only these (issue 36; the other columns, the
# constraint's JSON form and the timestamps above all, cost a cycle their decoding and were
# never read).
BEST_OFFER_FIELDS = ("market_id", "seller_id", "state", "constraint_text")
BEST_OFFER_MARKET_FIELDS = ("subject", "tick", "pricing", "schema")
# A ``Notification``'s columns in the order its constructor takes them by position (which
# ``_note`` relies on; tests/exchange/test_best_write.py checks it).
NOTE_FIELDS = (
    "id",
    "recipient_id",
    "market_id",
    "offer_id",
    "type",
    "data",
    "created_at",
    "delivered_at",
)
_NOTE_MARKET = Notification.market.field
_NOTE_OFFER = Notification.offer.field
_NOTE_RECIPIENT = Notification.recipient.field


def _note(
    *, offer: Offer, recipient_id: int | None, kind: str, data: dict[str, object]
) -> Notification:
    """The unsaved outbox row ``Notification(market=offer.market, offer=offer,
    recipient_id=recipient_id, type=kind, data=data)`` (``recipient=None`` when
    ``recipient_id`` is None), the same object with the same related objects cached, made in
    a third of the time: by position, which skips Django's checks of each related object.
    A cycle makes several for every changed best bid, and the keyword form was a fifth of
    ``best_offers_refresh``'s CPU (issue 36)."""
    # In the order of NOTE_FIELDS (django-stubs type a model's positional arguments by the
    # field, not its column: a recipient's id is not a User, hence Any).
    row: Any = (None, recipient_id, offer.market_id, offer.pk, kind, data, None, None)
    note = Notification(*row)
    # As assigning the market does: the row belongs to the database of its related objects.
    note._state.db = router.db_for_write(Notification, instance=offer.market)
    _NOTE_MARKET.set_cached_value(note, offer.market)
    _NOTE_OFFER.set_cached_value(note, offer)
    if recipient_id is None:
        _NOTE_RECIPIENT.set_cached_value(note, None)
    return note


def best_offer_notifications(
    *, offer: Offer, old: Best, new: Best, facts: BestFacts
) -> list[Notification]:
    """The outbox rows for a change of ``offer``'s best bid (SPEC 5.4); ``facts`` from
    ``best_offer_facts`` over a batch that includes this change.

    Always the market's. When the best bid or its value changed, also, each only when it is
    true for its recipient:

    * the seller, while the offer is open (a closed offer's seller hears of its trade or
      that it closed unsold, a cancelled one's from ``offer_event``; a withdrawn one's
      seller did it);
    * the new best bidder (``best_bid``);
    * the bidder who lost the top place, by what happened to its bid: ``outbid`` when an
      auction has a better bid now, ``not_best`` (``status`` ``behind``) when another bid is
      ahead without bidding more (a fixed price, or a tie with an earlier bid),
      ``not_best`` (``unmatched``) when the bid no longer matches, ``offer_ended`` when the
      offer was withdrawn or cancelled; nothing when the offer closed (closing tells every
      bid that matched it, ``outcome_notifications``) or when the bid itself left (it
      filled, here or elsewhere, was withdrawn, or was set aside: those have rows of their
      own).
    """
    market = offer.market
    public = {
        "offer": offer.pk,
        "market": market.subject,
        "best_value": price_text(new.value, market.tick),
        "matching_bids": new.matching_bids,
        "state": offer.state,
    }
    notes = [_note(offer=offer, recipient_id=None, kind="best_offer", data=public)]
    if (old.bid_id, old.value) == (new.bid_id, new.value):
        return notes
    is_open = offer.state == Offer.State.OPEN
    personal = {**public, **_personal(offer)}
    if is_open:
        notes.append(
            _note(
                offer=offer,
                recipient_id=offer.seller_id,
                kind="best_offer",
                data={**personal, "previous_value": price_text(old.value, market.tick)},
            )
        )
    bids = facts.bids
    if new.bid_id is not None:
        notes.append(
            _note(
                offer=offer,
                recipient_id=bids[new.bid_id][0],
                kind="best_bid",
                data={**personal, "bid": new.bid_id, "status": "best"},
            )
        )
    if old.bid_id is None or old.bid_id == new.bid_id or old.bid_id not in bids:
        return notes
    buyer_id, state, set_aside_at = bids[old.bid_id]
    if state != Bid.State.ACTIVE or set_aside_at is not None:
        return notes  # it filled, was withdrawn or set aside: its own row says so
    if offer.state == Offer.State.CLOSED:
        return notes  # closing tells every bid that matched how it ended (outcome_notifications)
    if is_open:
        value = facts.values.get((offer.pk, old.bid_id))
        if value is None:
            kind, status = "not_best", "unmatched"
        elif personal["pricing"] != "fixed" and new.value is not None and new.value > value:
            kind, status = "outbid", "outbid"
        else:
            kind, status = "not_best", "behind"
    else:
        kind, status = "offer_ended", offer.state
    notes.append(
        _note(
            offer=offer,
            recipient_id=buyer_id,
            kind=kind,
            data={**personal, "bid": old.bid_id, "status": status},
        )
    )
    return notes


def trade_notifications(*, offer: Offer, trade: Trade | None) -> list[Notification]:
    """The outbox rows for a closed auction: public and the seller's, plus the buyer's on a
    trade (the agreed constraint and the buyer's name only for the parties). A trade's rows
    carry its total (price times quantity, None without a quantity)."""
    data = {
        "offer": offer.pk,
        "market": offer.market.subject,
        "state": offer.state,
        "sold": trade is not None,
    }
    # (recipient id or None for the public row, data) for each row, all of one type.
    rows: list[tuple[int | None, dict[str, object]]]
    personal = _personal(offer)
    if trade is None:
        kind, rows = "offer", [(None, data), (offer.seller_id, {**data, **personal})]
    else:
        tick = offer.market.tick
        total = None if trade.quantity is None else trade.price * trade.quantity
        public = {
            **data,
            "trade": trade.pk,
            "price": price_text(trade.price, tick),
            "quantity": number_text(trade.quantity),
            "total": price_text(total, tick),
        }
        private = {
            **public,
            **personal,
            "bid": trade.bid_id,
            "agreed_constraint": trade.agreed_constraint,
        }
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


def outcome_notifications(
    *, offer: Offer, trade: Trade | None, outcomes: Sequence[BidOutcome], buyers: dict[int, int]
) -> list[Notification]:
    """The outbox rows that tell each bid that matched a closed auction and did not win it
    how it ended (the winner's is its ``trade`` row): an ``offer_ended`` row with ``status``
    ``lost`` (another bid won; ``price`` is the winning price, ``own`` whether the winner is
    the same buyer's) or ``over_limit`` (its award, ``total``, would have gone past its
    buyer's remaining spending limit, ``remaining``; ``price`` the winning price or None
    when none won). ``buyers`` maps each bid to its buyer."""
    tick = offer.market.tick
    personal = {
        "offer": offer.pk,
        "market": offer.market.subject,
        "state": offer.state,
        "sold": trade is not None,
        "price": None if trade is None else price_text(trade.price, tick),
        **_personal(offer),
    }
    notes = []
    for outcome in outcomes:
        if outcome.result == BidOutcome.Result.WON:
            continue
        data: dict[str, object] = {**personal, "bid": outcome.bid_id, "status": outcome.result}
        if outcome.result == BidOutcome.Result.LOST:
            data["own"] = trade is not None and trade.buyer_id == buyers[outcome.bid_id]
            data["winning_bid"] = None if trade is None else trade.bid_id
        else:
            data["total"] = price_text(outcome.total, tick)
            data["remaining"] = price_text(outcome.remaining, tick)
        notes.append(
            Notification(
                market=offer.market,
                offer=offer,
                recipient_id=buyers[outcome.bid_id],
                type="offer_ended",
                data=data,
            )
        )
    return Notification.objects.bulk_create(notes)


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
    """A public ``offer`` event: an offer was posted, amended, withdrawn or cancelled; when
    staff cancelled it, also a personal ``offer`` row for its seller (who did not do it)."""
    data = {
        "offer": offer.pk,
        "market": offer.market.subject,
        "state": offer.state,
        "version": offer.version,
        "constraint": offer.constraint_text,
    }
    notes = [Notification(market=offer.market, offer=offer, type="offer", data=data)]
    if offer.state == Offer.State.CANCELLED:
        personal = {**data, **_personal(offer)}
        notes.append(
            Notification(
                market=offer.market,
                offer=offer,
                recipient_id=offer.seller_id,
                type="offer",
                data=personal,
            )
        )
    notifications_push_on_commit(Notification.objects.bulk_create(notes))


def notifications_push_on_commit(notes: Iterable[Notification]) -> None:
    """After commit, push the rows over Channels (a beat sweep pushes what a crash left).

    The rows are pushed from the objects in hand rather than read back: only which of them
    are still undelivered is read (the sweep may have taken one meanwhile), not their
    payloads, which the matching worker would otherwise decode again after every cycle."""
    kept = sorted((n for n in notes if n.pk is not None), key=lambda n: n.pk)
    if kept:
        after_commit("pushing notifications", lambda: _push_undelivered(kept))


def _push_undelivered(notes: list[Notification]) -> int:
    waiting = set(
        Notification.objects.filter(pk__in=[n.pk for n in notes], delivered_at=None).values_list(
            "pk", flat=True
        )
    )
    return _push([n for n in notes if n.pk in waiting])


def _push(notes: list[Notification]) -> int:
    """Send ``notes`` (undelivered, in id order, each with its market) and mark them
    delivered; a failed send raises before any is marked, so the sweep tries them again.

    Public rows go to the market's and the offer's streams (and so to the market patterns
    that match the market's subject, ``exchange/realtime/patterns.py``); personal rows wake the
    recipient's connections, which then read their notifications from the outbox.
    """
    messages = []
    woken: dict[int, int] = {}
    for note in notes:
        if note.recipient_id is None:
            streams = [f"market:{note.market.subject}"]
            if note.offer_id is not None:
                streams.append(f"offer:{note.offer_id}")
            for stream in streams:
                messages += realtime.public_messages(
                    stream=stream, type=note.type, seq=note.pk, data=note.data
                )
        else:
            woken[note.recipient_id] = max(woken.get(note.recipient_id, 0), note.pk)
    messages += [realtime.wake_message(user_id=user_id, seq=seq) for user_id, seq in woken.items()]
    realtime.group_send_all(messages)
    if notes:
        Notification.objects.filter(pk__in=[n.pk for n in notes], delivered_at=None).update(
            delivered_at=timezone.now()
        )
    return len(notes)


def notifications_sweep(*, older_than: dt.timedelta) -> int:
    """Push the notifications a crash or an outage left undelivered for ``older_than``
    (younger ones are still on their way after their commit); returns how many."""
    stale = timezone.now() - older_than
    return _push(
        list(
            Notification.objects.filter(delivered_at=None, created_at__lte=stale)
            .select_related("market")
            .order_by("id")[:5000]
        )
    )
