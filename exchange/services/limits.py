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

from decimal import ROUND_FLOOR, Decimal

from django.contrib.auth.models import User

from exchange.errors import InvalidInput, NotAllowed
from exchange.models import SpendingLimit
from exchange.numbers import grouped_text, money_text, number_text, price_text
from exchange.selectors.limits import Award, Room


def award_check(*, award: Award, room: Room, tick: Decimal) -> None:
    """Refuse (``InvalidInput`` ``over_limit`` on ``constraint``, the numbers under
    ``limit``) a bid whose largest award is past the remaining limit."""
    if award.amount is not None and award.amount <= room.remaining:
        return

    def money(value: Decimal) -> str:
        return price_text(value, tick) or "0"

    def read(value: Decimal) -> str:  # an amount for people: grouped, 552,000.00
        return grouped_text(money_text(money(value)))

    remaining = max(room.remaining, Decimal(0))
    left = (
        f"{read(remaining)} is left of your spending limit of {read(room.limit)} "
        f"(your other active bids could cost {read(room.committed)})"
    )
    fits = (remaining / award.price).to_integral_value(ROUND_FLOOR) if award.price else None
    upper = f" of at most {grouped_text(number_text(fits))}." if fits is not None else "."
    if award.amount is None:
        message = (
            "Bid refused: it has no upper quantity and matches an open offer with none "
            f"either, so it could cost any amount; {left}. Give it an upper quantity{upper}"
        )
    else:
        lot = grouped_text(number_text(award.lot))
        message = (
            f"Bid refused: it could win {lot} at {grouped_text(money(award.price))}, "
            f"{read(award.amount)} in all, but {left}. Lower its price or give it an upper "
            f"quantity{upper}"
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
