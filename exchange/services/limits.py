"""Buyers' spending limits (issue 39): what a bid could cost, what a buyer has committed,
and the check that placing, amending and closing apply.

The definitions (docs/api.md, "Spending limits", says the same for bot authors):

* A bid's **largest award** is, over its tiers, the largest of the tier's highest price times
  the tier's largest lot. The largest lot is the tier's upper quantity; a tier with none
  takes the largest quantity it could agree on with any tier of an open offer of the market
  that it matches now (none matching: 0); when that agreement has no upper quantity either,
  the award is unbounded. In a market without a quantity attribute the lot is 1.
  It is computed when the bid is placed or amended and stored on the bid
  (``Bid.largest_award``): later offers do not change it.
* A buyer's **committed** amount is the sum of the largest awards of its active bids.
* The **remaining** limit is the buyer's limit (``SpendingLimit``, else the setting
  ``SPENDING_LIMIT_DEFAULT``) minus what the buyer's other active bids commit.
* Placing or amending a bid whose largest award exceeds the remaining limit is refused with
  a 400 ``over_limit`` naming the numbers (never accepted capped: a bot must know exactly
  what it bids for).
* Closing awards a bid only if the trade's total (price times quantity) is within the
  remaining limit of its buyer (the bid's own commitment not counted); a bid past it is
  passed over and the next eligible bid wins (``exchange.services.closing``).

One limit spans every market: all prices are in the exchange's one currency.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import OuterRef, Subquery, Sum

import matching
from exchange.engine.constraints import orders_usable
from exchange.errors import InvalidInput, NotAllowed
from exchange.market_rules import MarketSchema, numeric_value, with_subject
from exchange.models import Bid, Market, Offer, SpendingLimit
from exchange.numbers import number_text, price_text
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


def buyer_room(*, buyer_id: int, other_than: int | None = None, lock: bool = False) -> Room:
    """The buyer's limit and what its active bids but ``other_than`` commit, in one query.

    ``lock`` also takes the buyer's row lock for the rest of the transaction, so two of its
    bids are never checked against the same remaining limit at once. Orders take it after
    locking the bid they change (closing too), so lockers never deadlock; FOR NO KEY UPDATE
    leaves the foreign-key checks of rows that name the buyer free."""
    active = Bid.objects.filter(buyer_id=OuterRef("pk"), state=Bid.State.ACTIVE)
    if other_than is not None:
        active = active.exclude(pk=other_than)
    users = User.objects.filter(pk=buyer_id)
    if lock:
        users = users.select_for_update(no_key=True, of=("self",))
    limit, committed = users.values_list(
        Subquery(SpendingLimit.objects.filter(user_id=OuterRef("pk")).values("amount")),
        Subquery(
            active.order_by()
            .values("buyer_id")
            .annotate(total=Sum("largest_award"))
            .values("total")
        ),
    ).get()
    return Room(
        limit=Decimal(settings.SPENDING_LIMIT_DEFAULT) if limit is None else limit,
        committed=committed or Decimal(0),
    )


def award_check(*, award: Award, room: Room, tick: Decimal) -> None:
    """Refuse (``InvalidInput`` ``over_limit`` on ``constraint``, the numbers under
    ``limit``) a bid whose largest award is past the remaining limit."""
    if award.amount is not None and award.amount <= room.remaining:
        return

    def money(value: Decimal) -> str:
        return price_text(value, tick) or "0"

    remaining = max(room.remaining, Decimal(0))
    left = (
        f"{money(remaining)} is left of your spending limit of {money(room.limit)} "
        f"(your other active bids could cost {money(room.committed)})"
    )
    fits = (remaining / award.price).to_integral_value(ROUND_FLOOR) if award.price else None
    if award.amount is None:
        message = (
            "Bid refused: it has no upper quantity and matches an open offer with none "
            f"either, so it could cost any amount; {left}. Give it an upper quantity"
            + (f" of at most {number_text(fits)}." if fits is not None else ".")
        )
    else:
        lot = number_text(award.lot)
        message = (
            f"Bid refused: it could win {lot} at {money(award.price)}, "
            f"{money(award.amount)} in all, but {left}. Lower its price or give it an upper "
            "quantity" + (f" of at most {number_text(fits)}." if fits is not None else ".")
        )
    raise InvalidInput(
        "over_limit",
        message,
        field="constraint",
        extra={
            "limit": {
                "limit": money(room.limit),
                "committed": money(room.committed),
                "remaining": money(room.remaining),
                "largest_award": None if award.amount is None else money(award.amount),
                "largest_lot": number_text(award.lot),
                "price": money(award.price),
            }
        },
    )


def spending_limit_set(*, staff: User | None, user: User, amount: Decimal) -> SpendingLimit:
    """Staff set ``user``'s spending limit (``staff=None``: a management command, the demo's
    loader). It bounds the bids placed, amended and awarded from now on; bids already
    active stay (their buyer sees the new remaining limit)."""
    if staff is not None and not staff.is_staff:
        raise NotAllowed("staff_only", "Only staff set spending limits.")
    if not amount.is_finite() or amount < 0:
        raise InvalidInput(
            "invalid_limit", "A spending limit is a number, 0 or more.", field="amount"
        )
    row, _ = SpendingLimit.objects.update_or_create(user=user, defaults={"amount": amount})
    return row
