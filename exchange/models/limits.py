"""Buyers' spending limits and what each auction told its bidders (issue 39)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SpendingLimit(models.Model):
    """A buyer's spending limit, set by staff; a buyer without a row has the default
    (``settings.SPENDING_LIMIT_DEFAULT``). See ``exchange.services.limits`` for what it
    bounds."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="spending_limit",
    )
    amount = models.DecimalField(max_digits=30, decimal_places=10)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(amount__gte=0), name="spendinglimit_not_negative"
            )
        ]

    def __str__(self) -> str:
        return f"spending limit of user {self.user_id}: {self.amount}"


class BuyerCommitment(models.Model):
    """What a buyer's active bids commit of its spending limit: the sum of their
    ``largest_award`` (a bid without one commits nothing), kept by triggers on
    ``exchange_bid`` in the statement that changes a bid (migration 0026), so that the
    limit check of a bid reads one row where it summed every active bid of its buyer (0.5 ms
    of PostgreSQL a bid at 2,700 active bids a buyer, and growing with them: issue 36). A
    buyer without a row commits nothing. No foreign key: a user can be deleted once its
    bids are (``Bid.buyer`` protects it until then), and its row, left at zero by those
    deletions, would then make a key refuse the user's; the row stays behind, harmless."""

    buyer = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        primary_key=True,
        related_name="+",
    )
    committed = models.DecimalField(max_digits=40, decimal_places=10, default=0)

    def __str__(self) -> str:
        return f"commitment of user {self.buyer_id}: {self.committed}"


class BidOutcome(models.Model):
    """What a closed auction meant for one bid that matched it: won, lost to a better bid,
    or passed over because the award would have gone past its buyer's limit. Written in
    the closing transaction, one per (offer, bid); ``price`` is the winning price (None when
    the auction closed unsold), ``value`` the bid's value on the offer when it closed."""

    class Result(models.TextChoices):
        WON = "won", "Won"
        LOST = "lost", "Did not win"
        OVER_LIMIT = "over_limit", "Passed over: beyond the spending limit"

    bid = models.ForeignKey("exchange.Bid", on_delete=models.CASCADE, related_name="outcomes")
    offer = models.ForeignKey("exchange.Offer", on_delete=models.CASCADE, related_name="+")
    result = models.CharField(max_length=12, choices=Result.choices)
    price = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    value = models.DecimalField(max_digits=30, decimal_places=10)
    # On ``over_limit``: what the award would have cost (None: no upper quantity) and what
    # was left of the buyer's limit then.
    total = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    remaining = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["offer", "bid"], name="bidoutcome_unique_pair"),
            models.CheckConstraint(
                condition=models.Q(result__in=["won", "lost", "over_limit"]),
                name="bidoutcome_result_known",
            ),
        ]
        indexes = [models.Index(fields=["bid", "id"])]

    def __str__(self) -> str:
        return f"bid {self.bid_id} {self.result} offer {self.offer_id}"
