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
        # "%(class)s" names the constraint after each kind of order: offer_..., bid_...
        constraints = [
            models.CheckConstraint(
                condition=SET_ASIDE_HAS_REASON, name="%(class)s_set_aside_has_reason"
            ),
        ]


class Offer(Order):
    class State(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"
        CANCELLED = "cancelled", "Cancelled by staff"
        WITHDRAWN = "withdrawn", "Withdrawn by the seller"

    seller = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="offers"
    )
    state = models.CharField(max_length=12, choices=State.choices, default=State.OPEN)
    closes_at = models.DateTimeField(null=True, blank=True)

    class Meta(Order.Meta):
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state__in=["open", "closed", "cancelled", "withdrawn"]),
                name="offer_state_known",
            ),
            *Order.Meta.constraints,
        ]

    def __str__(self) -> str:
        return f"offer {self.pk} in {self.market.subject}"


class Bid(Order):
    class State(models.TextChoices):
        ACTIVE = "active", "Active"
        FILLED = "filled", "Filled"
        WITHDRAWN = "withdrawn", "Withdrawn"

    buyer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="bids"
    )
    state = models.CharField(max_length=12, choices=State.choices, default=State.ACTIVE)
    # When the bid took its current form: ties on value go to the earlier bid, and an
    # amended bid queues behind the bids that were there before the amendment.
    priority_at = models.DateTimeField(default=timezone.now)

    class Meta(Order.Meta):
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state__in=["active", "filled", "withdrawn"]),
                name="bid_state_known",
            ),
            *Order.Meta.constraints,
        ]

    def __str__(self) -> str:
        return f"bid {self.pk} in {self.market.subject}"


# Code written once for both kinds of order (a model class in, its rows out).
OrderT = TypeVar("OrderT", Offer, Bid)
