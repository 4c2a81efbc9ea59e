"""Reading buyers' spending limits (issue 39): what a bid could cost, what a buyer has
committed and what remains. The definitions are in ``exchange.services.limits``, which
checks them when bids are placed, amended and awarded."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection

import matching
from exchange.engine.constraints import orders_usable
from exchange.market_rules import ConstraintSource, MarketSchema, numeric_value, with_subject
from exchange.models import Bid, BuyerCommitment, Market, Offer, SpendingLimit
from exchange.selectors.markets import constraint_check, market_schema
from matching.model import Attribute, Constraint, Disjunct, Interval


@dataclass(frozen=True)
class Award:
    """The largest award of a bid: ``amount`` (None: unbounded) is ``price`` times ``lot``
    (None: no upper quantity anywhere) in the tier that gives it."""

    amount: Decimal | None
    lot: Decimal | None
    price: Decimal


def _interval(disjunct: Disjunct, schema_attribute: Attribute) -> Interval | None:
    predicate = disjunct.get(schema_attribute)
    return predicate if isinstance(predicate, Interval) else None


def _open_offers(market: Market) -> list[tuple[Constraint, Offer]]:
    offers = list(
        Offer.objects.filter(market=market, state=Offer.State.OPEN, set_aside_at=None)
        .select_related("market")
        .only("id", "constraint_text", "market__subject", "market__schema")
    )
    usable, _ = orders_usable(offers)
    return [(usable[o.pk][0], o) for o in offers if o.pk in usable]


def bid_largest_award(*, market: Market, schema: MarketSchema, constraint: Constraint) -> Award:
    """The largest award of a bid with ``constraint`` (as the market's rules return it,
    without the subject) in ``market``; see the module's docstring."""
    quantity = schema.by_role("quantity")
    offers: list[tuple[Constraint, Offer]] | None = None  # read once, if a tier needs them
    best: Award | None = None
    stored = with_subject(constraint, market.subject)
    for disjunct, own in zip(stored, constraint, strict=True):
        price_bound = _interval(own, schema.price.attribute)
        assert price_bound is not None and price_bound.hi is not None  # the market's rules
        price = numeric_value(price_bound.hi)
        lot: Decimal | None = Decimal(1)
        if quantity is not None:
            bound = _interval(own, quantity.attribute)
            if bound is not None and bound.hi is not None:
                lot = numeric_value(bound.hi)
            else:
                if offers is None:
                    offers = _open_offers(market)
                lot = Decimal(0)
                for offer, _ in offers:
                    for dp in offer:
                        if not matching.disjuncts_match(dp, disjunct):
                            continue
                        top = matching.agree(dp, disjunct).max_value(quantity.attribute)
                        if top is None:
                            lot = None
                            break
                        lot = max(lot, numeric_value(top))
                    if lot is None:
                        break
        award = Award(None if lot is None else price * lot, lot, price)
        if best is None or _larger(award, best):
            best = award
    assert best is not None  # a constraint has at least one tier
    return best


def _larger(a: Award, b: Award) -> bool:
    if b.amount is None:
        return False
    return a.amount is None or a.amount > b.amount


def buyer_limit(*, buyer_id: int) -> Decimal:
    """The buyer's spending limit: the one staff set, else the default setting."""
    return buyer_room(buyer_id=buyer_id).limit


def buyer_committed(*, buyer_id: int, other_than: int | None = None) -> Decimal:
    """What the buyer's active bids (but ``other_than``) commit: their largest awards."""
    return buyer_room(buyer_id=buyer_id, other_than=other_than).committed


@dataclass(frozen=True)
class Room:
    """A buyer's limit, what its other active bids commit, and what remains."""

    limit: Decimal
    committed: Decimal

    @property
    def remaining(self) -> Decimal:
        return self.limit - self.committed


# ``buyer_room``'s statement: the limit and the commitment (``BuyerCommitment``, kept by
# triggers on the bids: migration 0026) as scalar subqueries, which the locking clause
# does not reach; with ``other``, less what that bid of the buyer commits if it is active.
_ROOM = (
    'SELECT (SELECT U0."amount" FROM "{limits}" U0 WHERE U0."user_id" = ("{users}"."id")), '
    'coalesce((SELECT U0."committed" FROM "{commitments}" U0 '
    'WHERE U0."buyer_id" = ("{users}"."id")), 0){other} '
    'FROM "{users}" WHERE "{users}"."id" = %s'
)
_OTHER = (
    ' - coalesce((SELECT U0."largest_award" FROM "{bids}" U0 WHERE U0."id" = %s '
    'AND U0."buyer_id" = ("{users}"."id") AND U0."state" = %s), 0)'
)


def _room_sql(*, other: bool) -> str:
    names = {
        "limits": SpendingLimit._meta.db_table,
        "commitments": BuyerCommitment._meta.db_table,
        "bids": Bid._meta.db_table,
        "users": User._meta.db_table,
    }
    return _ROOM.format(**names, other=_OTHER.format(**names) if other else "")


_ROOM_SQL = {o: _room_sql(other=o) for o in (False, True)}
# The buyer's row lock and then its room, as of after the lock: a statement reads the
# database as it was when it began, so a check that waited for the lock within one statement
# would add up the buyer's bids without the one it waited for, and two bids placed at once
# could together pass the limit (tests/exchange/test_limit_race.py). The function (migration
# 0027) runs the two as statements of its own, each with a new snapshot, in one round trip;
# a bid's placement calls it inside its insert (``exchange.services.orders``).
_LOCKED_ROOM_SQL = "SELECT amount, committed FROM exchange_buyer_room(%s, %s)"


def room_of(amount: Decimal | None, committed: Decimal | None) -> Room:
    """The room of a buyer whose limit row holds ``amount`` (None: none, the default
    applies) and whose other active bids commit ``committed``."""
    return Room(
        limit=Decimal(settings.SPENDING_LIMIT_DEFAULT) if amount is None else amount,
        committed=committed or Decimal(0),
    )


def buyer_room(*, buyer_id: int, other_than: int | None = None, lock: bool = False) -> Room:
    """The buyer's limit and what its active bids but ``other_than`` commit, in one query.

    ``lock`` first takes the buyer's row lock for the rest of the transaction (in the same
    round trip, ``_LOCKED_ROOM_SQL``), so two of its bids are never checked against the same
    remaining limit at once. Orders take it after locking the bid they change (closing
    too), so lockers never deadlock; FOR NO KEY UPDATE leaves the foreign-key checks of rows
    that name the buyer free."""
    with connection.cursor() as cursor:
        if lock:
            cursor.execute(_LOCKED_ROOM_SQL, [buyer_id, other_than])
        else:
            params: list[int | str] = (
                [] if other_than is None else [other_than, str(Bid.State.ACTIVE)]
            )
            cursor.execute(_ROOM_SQL[other_than is not None], [*params, buyer_id])
        row = cursor.fetchone()
    if row is None:
        raise User.DoesNotExist("User matching query does not exist.")
    return room_of(*row)


def buyer_rooms(*, buyer_ids: set[int]) -> dict[int, Room]:
    """``buyer_room`` of each of ``buyer_ids`` (all its active bids counted), in two
    queries however many buyers (the staff's winner-to-be pages)."""
    if not buyer_ids:
        return {}
    limits = dict(
        SpendingLimit.objects.filter(user_id__in=buyer_ids).values_list("user_id", "amount")
    )
    committed = dict(
        BuyerCommitment.objects.filter(buyer_id__in=buyer_ids).values_list("buyer_id", "committed")
    )
    default = Decimal(settings.SPENDING_LIMIT_DEFAULT)
    return {
        b: Room(limit=limits.get(b, default), committed=committed.get(b) or Decimal(0))
        for b in buyer_ids
    }


@dataclass(frozen=True)
class AwardPreview:
    """What a bid not yet placed could win, and (for a signed-in buyer) the room it would
    have: what the bid form shows before it is sent."""

    award: Award
    room: Room | None

    @property
    def fits(self) -> bool:
        """Whether placing it would pass the limit check (always, for a visitor)."""
        if self.room is None:
            return True
        return self.award.amount is not None and self.award.amount <= self.room.remaining


def bid_award_preview(
    *, market: Market, buyer: User | AnonymousUser, source: ConstraintSource
) -> AwardPreview:
    """The largest award of a bid with ``source`` in ``market`` and its buyer's room, as
    placing it would compute them; ``InvalidInput`` as placing it would raise."""
    rules = constraint_check(market=market, side="bid", source=source)
    award = bid_largest_award(
        market=market, schema=market_schema(market=market), constraint=rules.constraint
    )
    room = buyer_room(buyer_id=buyer.pk) if buyer.is_authenticated else None
    return AwardPreview(award=award, room=room)
