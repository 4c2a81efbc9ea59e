"""Offers (publications) and bids (subscriptions): SPEC 5.2."""

from __future__ import annotations

from typing import TypeVar

from django.conf import settings
from django.db import models
from django.utils import timezone

# An order is set aside with a reason, or not at all.
SET_ASIDE_HAS_REASON = models.Q(set_aside_at__isnull=True, set_aside_reason="") | (
    models.Q(set_aside_at__isnull=False) & ~models.Q(set_aside_reason="")
)


class Order(models.Model):
    """What offers and bids share: a market, a constraint and a version."""

    market = models.ForeignKey("exchange.Market", on_delete=models.PROTECT)
    # The canonical text of the normalized constraint (it parses back to the same constraint).
    constraint_text = models.TextField()
    constraint_json = models.JSONField()
    version = models.PositiveIntegerField(default=1)
    # Set when the matching engine could not use the stored constraint (it no longer parses,
    # or no longer fits the store): the order stays in its state but is left out of
    # matching until its owner amends it, and staff see why on the dashboard.
    set_aside_at = models.DateTimeField(null=True, blank=True)
    set_aside_reason = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["id"]
        indexes = [models.Index(fields=["market", "state"])]


def _order_checks(kind: str, states: list[str]) -> list[models.BaseConstraint]:
    """What PostgreSQL checks on every row of one kind of order: its state is one of
    ``states`` (the choices of the model's state), and it has a reason iff it is set aside."""
    return [
        models.CheckConstraint(condition=models.Q(state__in=states), name=f"{kind}_state_known"),
        models.CheckConstraint(condition=SET_ASIDE_HAS_REASON, name=f"{kind}_set_aside_has_reason"),
    ]


# The states of offers and of bids, outside their models so that each model's Meta can check
# them (a class nested in a model does not see the model's other names).
class OfferState(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"
    CANCELLED = "cancelled", "Cancelled by staff"
    WITHDRAWN = "withdrawn", "Withdrawn by the seller"


class BidState(models.TextChoices):
    ACTIVE = "active", "Active"
    FILLED = "filled", "Filled"
    WITHDRAWN = "withdrawn", "Withdrawn"


class Offer(Order):
    State = OfferState

    seller = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="offers"
    )
    state = models.CharField(max_length=12, choices=State.choices, default=State.OPEN)
    closes_at = models.DateTimeField(null=True, blank=True)

    class Meta(Order.Meta):
        constraints = _order_checks("offer", OfferState.values)

    def __str__(self) -> str:
        return f"offer {self.pk} in {self.market.subject}"


class Bid(Order):
    State = BidState

    buyer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="bids"
    )
    state = models.CharField(max_length=12, choices=State.choices, default=State.ACTIVE)
    # When the bid took its current form: ties on value go to the earlier bid, and an
    # amended bid queues behind the bids that were there before the amendment.
    priority_at = models.DateTimeField(default=timezone.now)
    # The largest award the bid could win, fixed when it was placed or last amended
    # (exchange.services.limits.bid_largest_award); what it commits of its buyer's limit
    # while active. Null for bids placed before limits existed (they commit nothing).
    largest_award = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)

    class Meta(Order.Meta):
        constraints = _order_checks("bid", BidState.values)
        indexes = [
            *Order.Meta.indexes,
            # What a buyer's active bids commit (``exchange.selectors.limits.buyer_room``, on
            # every placement and amendment; the id for an amendment's "but this bid"), read
            # from the index alone: through the buyer's index it visited one heap page per
            # active bid, 2,000 pages and 8 ms for a buyer of SPEC 9's book (issue 36).
            # Index-only as far as the visibility map goes: migration
            # ``0022_bid_buyer_commitments`` has the table vacuumed after fewer inserts than
            # PostgreSQL's default.
            models.Index(
                fields=["buyer"],
                include=["largest_award", "id"],
                condition=models.Q(state=BidState.ACTIVE),
                name="bid_buyer_active_award",
            ),
        ]

    def __str__(self) -> str:
        return f"bid {self.pk} in {self.market.subject}"


# Code written once for both kinds of order (a model class in, its rows out).
OrderT = TypeVar("OrderT", Offer, Bid)
