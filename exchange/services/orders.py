"""Writing offers and bids (SPEC 5.2): every change of an order goes through these functions.

Each function owns its transaction. Together with the order row it writes an ``OrderChange``
row, so the change cannot be lost, and asks for a matching cycle only after commit.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, localcontext

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import DecimalField, F, Field
from django.utils import timezone

from exchange.engine.constraints import market_schema_of
from exchange.errors import InvalidInput, NotAllowed, NotFound, StaleVersion
from exchange.market_rules import ConstraintSource, OrderConstraint, Side
from exchange.models import BestOffer, Bid, Market, Offer, OrderChange, SpendingLimit
from exchange.models.orders import OrderT
from exchange.selectors.limits import Room, bid_largest_award, buyer_room, room_of
from exchange.selectors.markets import constraint_check
from exchange.services.events import OrderEvent, order_event
from exchange.services.limits import award_check
from exchange.services.matching import cycle_lock_shared, tail_lock
from exchange.services.notifications import offer_event
from exchange.services.side_effects import after_commit
from exchange.tasks import matching_cycle_request
from matching.model import Constraint

# Offers and bids share one implementation of each change; ``OrderT`` keeps the caller's type.


def _rules(market: Market, side: Side, constraint: ConstraintSource) -> OrderConstraint:
    return constraint_check(market=market, side=side, source=constraint)


def order_changed(
    order: Offer | Bid, kind: str | None, constraint: Constraint | None = None
) -> None:
    """Record the change for the matching cycle, with its event of type ``kind`` as of the
    order's current version (the cycle writes it to the event log), and trigger a cycle
    after commit. ``constraint`` is the order's parsed constraint when ``kind`` posts or
    amends it; ``kind=None`` records a change the log does not show (the market rules
    rewrote a bid without changing what it accepts)."""
    event = None if kind is None else order_event(kind, order, constraint)
    OrderChange.objects.create(
        side=_side(order),
        order_id=order.pk,
        event=None if event is None else event.event,
        event_owner_id=None if event is None else event.owner_id,
    )
    market_id = order.market_id
    after_commit("triggering a matching cycle", lambda: matching_cycle_request(market_id))


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
    seller: User,
    market: Market,
    constraint: ConstraintSource,
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
        order_changed(offer, "offer_posted", rules.constraint)
        offer_event(offer)
    return offer


def _bid_award(
    market: Market, rules: OrderConstraint, buyer_id: int, bid_id: int | None
) -> Decimal:
    """The bid's largest award, checked against its buyer's remaining spending limit
    (``exchange.services.limits``); call it in the transaction that writes the bid, after
    locking the bid if it exists."""
    award = bid_largest_award(
        market=market, schema=market_schema_of(market), constraint=rules.constraint
    )
    room = buyer_room(buyer_id=buyer_id, other_than=bid_id, lock=True)
    award_check(award=award, room=room, tick=market.tick)
    assert award.amount is not None  # award_check refuses an unbounded one
    return award.amount


def _digits_bound(field: DecimalField) -> Decimal:
    """The least magnitude a value of ``field`` cannot reach."""
    return Decimal(10) ** (field.max_digits - field.decimal_places)


# Every award at or past this is over any buyer's limit (``SpendingLimit.amount`` holds
# less, and the settings refuse a larger ``SPENDING_LIMIT_DEFAULT``), and the award's column
# holds no larger value.
_AWARD_BOUND = _digits_bound(SpendingLimit._meta.get_field("amount"))
assert _digits_bound(Bid._meta.get_field("largest_award")) >= _AWARD_BOUND == 10**20


def bid_place(*, buyer: User, market: Market, constraint: ConstraintSource) -> Bid:
    """Place a buyer's bid (a subscription) in ``market``; refused (``over_limit``) when
    it could cost more than its buyer's remaining spending limit.

    The buyer's lock, the limit check and the bid's two rows are one statement
    (``_bid_insert``), so outside a caller's transaction the placement is that statement's
    own transaction: no ``BEGIN`` or ``COMMIT`` of its own to wait for (issue 36)."""
    rules = _rules(market, "bid", constraint)
    award = bid_largest_award(
        market=market, schema=market_schema_of(market), constraint=rules.constraint
    )
    if award.amount is None or abs(award.amount) >= _AWARD_BOUND:
        # Refused whatever the room: unbounded, or past any limit a buyer can have (the
        # limit's column holds no more digits), so past what the award's column holds too,
        # which the insert would fail on before its check could refuse it.
        award_check(award=award, room=buyer_room(buyer_id=buyer.pk), tick=market.tick)
    bid = Bid(
        market=market,
        buyer=buyer,
        constraint_text=rules.text,
        constraint_json=rules.json,
        largest_award=award.amount,
    )
    room = _bid_insert(bid, order_event("bid_placed", bid, rules.constraint))
    if bid.pk is None:
        # Decimal's default 28 digits could round a 30-digit limit; the statement's numeric
        # comparison is exact, and so is this one with room for the columns' 40 digits.
        with localcontext(prec=80):
            award_check(award=award, room=room, tick=market.tick)
        raise AssertionError("a refused bid passed the limit check")  # pragma: no cover
    market_id = market.pk
    after_commit("triggering a matching cycle", lambda: matching_cycle_request(market_id))
    return bid


def _insert_sql() -> tuple[str, list[Field]]:
    """``_bid_insert``'s statement and the bid's fields whose values it takes, in order
    after the buyer's id (then the award, the default limit, and the change's side, time,
    event and owner)."""
    fields = [f for f in Bid._meta.concrete_fields if not f.primary_key]
    change = OrderChange._meta
    columns = ", ".join(f'"{f.column}"' for f in fields)
    values = ", ".join("%s" for _ in fields)
    return (
        "WITH room AS (SELECT amount, committed FROM exchange_buyer_room(%s, NULL)), "
        f'b AS (INSERT INTO "{Bid._meta.db_table}" ({columns}) SELECT {values} FROM room '
        f'WHERE %s::numeric <= coalesce(room.amount, %s::numeric) - room.committed RETURNING "id"), '
        f'c AS (INSERT INTO "{change.db_table}" ("side", "order_id", '
        '"created_at", "processed_at", "event", "event_owner_id") '
        'SELECT %s, b."id", %s, NULL, jsonb_set(%s, \'{bid}\', to_jsonb(b."id")), %s '
        'FROM b) SELECT room.amount, room.committed, (SELECT b."id" FROM b) FROM room',
        fields,
    )


_BID_INSERT: tuple[str, list[Field]] | None = None


def _bid_insert(bid: Bid, event: OrderEvent) -> Room:
    """Write a new ``bid`` and its ``OrderChange`` (with ``event``, whose ``bid`` the
    statement fills in with the new id) as one statement, if its largest award is within
    its buyer's remaining limit, taken under the buyer's row lock in the same statement
    (``exchange_buyer_room``, migration 0027); returns the buyer's room before the bid.
    A bid refused keeps no ``pk``. Each field's value is prepared as ``Model.save``
    prepares it: through the ORM these were two ``INSERT``s, and with the lock, the check,
    ``BEGIN`` and ``COMMIT`` five round trips to PostgreSQL (py-spy, issue 36)."""
    global _BID_INSERT
    if _BID_INSERT is None:
        _BID_INSERT = _insert_sql()
    sql, fields = _BID_INSERT
    event_field = OrderChange._meta.get_field("event")
    params = [
        bid.buyer_id,
        *(f.get_db_prep_save(f.pre_save(bid, True), connection) for f in fields),
        bid.largest_award,
        Decimal(settings.SPENDING_LIMIT_DEFAULT),
        OrderChange.Side.BID,
        timezone.now(),
        event_field.get_db_prep_save(event.event, connection),
        event.owner_id,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise User.DoesNotExist("User matching query does not exist.")
    amount, committed, bid.pk = row
    if bid.pk is not None:
        bid._state.adding = False
        bid._state.db = connection.alias
    return room_of(amount, committed)


def _locked(model: type[OrderT], order_id: int) -> OrderT:
    try:
        return (
            model.objects.select_for_update(no_key=True, of=("self",))
            .select_related("market")
            .get(pk=order_id)
        )
    except model.DoesNotExist:
        raise NotFound("not_found", f"There is no {model.__name__.lower()} {order_id}.") from None


def _owned(order: Offer | Bid, user: User) -> None:
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


def _version(order: Offer | Bid, version: int) -> None:
    # Checked at run time too: callers pass what a client sent.
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


def _side(order: Offer | Bid) -> Side:
    return "offer" if isinstance(order, Offer) else "bid"


def _order_amend(
    model: type[OrderT],
    *,
    user: User,
    order_id: int,
    constraint: ConstraintSource,
    version: int,
) -> OrderT:
    """Replace a live order's constraint (offers and bids alike); ``version`` must be the
    current one (else 409). The new constraint passed the market's rules, so an order that
    was set aside comes back into matching. An amended bid queues behind the bids that were
    there before (``priority_at``); an amended offer is announced on its public streams."""
    with transaction.atomic():
        order = _locked(model, order_id)
        _owned(order, user)
        _live(order)
        _version(order, version)
        rules = _rules(order.market, _side(order), constraint)
        order.constraint_text, order.constraint_json = rules.text, rules.json
        order.version = F("version") + 1
        order.set_aside_at, order.set_aside_reason = None, ""
        fields: list[str] = [
            "constraint_text",
            "constraint_json",
            "version",
            "set_aside_at",
            "set_aside_reason",
        ]
        if isinstance(order, Bid):
            order.largest_award = _bid_award(order.market, rules, order.buyer_id, order.pk)
            order.priority_at = timezone.now()
            fields += ["priority_at", "largest_award"]
        order.save(update_fields=[*fields, "updated_at"])
        order.refresh_from_db()
        order_changed(order, f"{_side(order)}_amended", rules.constraint)
        if isinstance(order, Offer):
            offer_event(order)
    return order


def _order_end(model: type[OrderT], order_id: int, *, owner: User | None, state: str) -> OrderT:
    """Take a live order out of the book for good: withdrawn by ``owner``, or cancelled by
    staff (``owner=None``, checked by the caller). Ending it a second time changes nothing."""
    with transaction.atomic():
        if state == Offer.State.CANCELLED:
            # A staff cancel takes the tail lock below, after its offer's row: first the
            # cycle lock shared, as cycles take it, so that it never holds the row while a
            # close (which holds the cycle lock exclusively and takes order rows after the
            # tail lock: it sets orders aside in its later batches) holds the tail.
            cycle_lock_shared()
        order = _locked(model, order_id)
        if owner is not None:
            _owned(order, owner)
        if order.state == state:
            return order
        _live(order)
        order.state = state
        order.save(update_fields=["state", "updated_at"])
        order_changed(order, f"{_side(order)}_{state}")
        if isinstance(order, Offer):
            if state == Offer.State.CANCELLED:
                # Its seller's own ``offer`` row (``offer_event``) takes its id under the
                # cycles' tail lock, last and held to commit as theirs: the seller's ``me``
                # stream reads after the last id it sent and would skip a cycle's row
                # committed after a later one (docs/reliability.md). Staff cancels only.
                tail_lock()
            offer_event(order)
    return order


def offer_amend(
    *, seller: User, offer_id: int, constraint: ConstraintSource, version: int
) -> Offer:
    """Replace an open offer's constraint; ``version`` must be the current one (else 409)."""
    return _order_amend(
        Offer, user=seller, order_id=offer_id, constraint=constraint, version=version
    )


def bid_amend(*, buyer: User, bid_id: int, constraint: ConstraintSource, version: int) -> Bid:
    """Replace an active bid's constraint; ``version`` must be the current one (else 409)."""
    return _order_amend(Bid, user=buyer, order_id=bid_id, constraint=constraint, version=version)


def offer_withdraw(*, seller: User, offer_id: int) -> Offer:
    return _order_end(Offer, offer_id, owner=seller, state=Offer.State.WITHDRAWN)


def offer_cancel(*, staff: User, offer_id: int) -> Offer:
    """Staff cancel an open offer (no trade)."""
    if not staff.is_staff:
        raise NotAllowed("staff_only", "Only staff can cancel an offer.")
    return _order_end(Offer, offer_id, owner=None, state=Offer.State.CANCELLED)


def bid_withdraw(*, buyer: User, bid_id: int) -> Bid:
    return _order_end(Bid, bid_id, owner=buyer, state=Bid.State.WITHDRAWN)
