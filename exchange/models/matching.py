"""What the continuous matching transaction maintains (SPEC 5.3, 5.4)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class OrderChange(models.Model):
    """A committed change of an offer or bid that the next matching cycle must take in.

    Written in the same transaction as the change itself, so a crash can never lose one;
    a cycle marks the rows it processed in its own transaction. ``event`` is the change's
    event as of this version (``type``, ``subject`` and the attributes of SPEC 8.1, in
    JSON form) and ``event_owner`` the bidder of a private one; the cycle copies them into
    the event log. Rows written before the log existed have no event.
    """

    class Side(models.TextChoices):
        OFFER = "offer"
        BID = "bid"

    side = models.CharField(max_length=5, choices=Side.choices)
    order_id = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    event = models.JSONField(null=True, blank=True)
    event_owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(
                fields=["id"], name="orderchange_pending", condition=models.Q(processed_at=None)
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(side__in=["offer", "bid"]), name="orderchange_side_known"
            )
        ]

    def __str__(self) -> str:
        return f"{self.side} {self.order_id} changed"


class OfferBidMatch(models.Model):
    """A matching (open offer, active bid) pair and its value: the highest price both accept.

    ``pub_disjunct`` / ``sub_disjunct`` name the disjunct pair that gives the value (the first
    such pair when several tie); the trade's agreed constraint comes from it.
    """

    # No index of their own: the unique pair's index leads with the offer and ``Meta``'s
    # index is the bid's. Each was a second copy that every match a cycle writes or deletes
    # kept up to date (issues 35 and 36).
    offer = models.ForeignKey(
        "exchange.Offer", on_delete=models.CASCADE, related_name="matches", db_index=False
    )
    bid = models.ForeignKey(
        "exchange.Bid", on_delete=models.CASCADE, related_name="matches", db_index=False
    )
    value = models.DecimalField(max_digits=30, decimal_places=10)
    pub_disjunct = models.PositiveIntegerField()
    sub_disjunct = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["offer", "bid"], name="offerbidmatch_unique_pair")
        ]
        indexes = [models.Index(fields=["bid"])]

    def __str__(self) -> str:
        return f"offer {self.offer_id} x bid {self.bid_id} at {self.value}"


class BestOffer(models.Model):
    """The best bid of one open offer (seed 000, section 7.1); one row per open offer."""

    offer = models.OneToOneField(
        "exchange.Offer", on_delete=models.CASCADE, primary_key=True, related_name="best"
    )
    bid = models.ForeignKey(
        "exchange.Bid", null=True, blank=True, on_delete=models.SET_NULL, related_name="best_on"
    )
    value = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    matching_bids = models.PositiveIntegerField(default=0)
    changed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(bid__isnull=True, value__isnull=True, matching_bids=0)
                | models.Q(bid__isnull=False, value__isnull=False, matching_bids__gt=0),
                name="bestoffer_bid_value_count_agree",
            )
        ]

    def __str__(self) -> str:
        return f"best bid of offer {self.offer_id}: {self.bid_id} at {self.value}"


class BestOfferChange(models.Model):
    """History of an offer's best bid: one row per change (charts, analytics)."""

    offer = models.ForeignKey(
        "exchange.Offer", on_delete=models.CASCADE, related_name="best_history"
    )
    bid = models.ForeignKey("exchange.Bid", null=True, on_delete=models.SET_NULL, related_name="+")
    value = models.DecimalField(max_digits=30, decimal_places=10, null=True)
    matching_bids = models.PositiveIntegerField()
    at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["offer", "at"])]

    def __str__(self) -> str:
        return f"offer {self.offer_id} best {self.bid_id} at {self.value} ({self.at:%Y-%m-%d %H:%M:%S})"


class MatchingCycle(models.Model):
    """One run of the continuous matching transaction (for the staff dashboard)."""

    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    changes = models.PositiveIntegerField()
    offers_touched = models.PositiveIntegerField()
    notifications = models.PositiveIntegerField()
    # Orders the cycle found it could not use and set aside (see services.matching).
    set_aside = models.PositiveIntegerField(default=0)
    strategy = models.CharField(max_length=10)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"cycle {self.pk}: {self.changes} changes"

    @property
    def duration_ms(self) -> float:
        return (self.finished_at - self.started_at).total_seconds() * 1000
