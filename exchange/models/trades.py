from __future__ import annotations

from django.conf import settings
from django.db import models


class Trade(models.Model):
    """A closed auction (SPEC 5.5): one per sold offer, one per filled bid."""

    offer = models.OneToOneField("exchange.Offer", on_delete=models.PROTECT, related_name="trade")
    bid = models.OneToOneField("exchange.Bid", on_delete=models.PROTECT, related_name="trade")
    market = models.ForeignKey("exchange.Market", on_delete=models.PROTECT, related_name="trades")
    seller = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="sales"
    )
    buyer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="purchases"
    )
    price = models.DecimalField(max_digits=30, decimal_places=10)
    quantity = models.DecimalField(max_digits=30, decimal_places=10, null=True, blank=True)
    pricing = models.CharField(max_length=10)
    agreed_constraint = models.TextField()
    agreed_constraint_json = models.JSONField()
    closed_at = models.DateTimeField()

    class Meta:
        ordering = ["-closed_at", "-id"]
        indexes = [models.Index(fields=["market", "closed_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(price__gte=0), name="trade_price_not_negative"
            )
        ]

    def __str__(self) -> str:
        # No price: written raw it would show all ten stored places (the admin shows it to
        # the market's tick in its own field).
        return f"trade {self.pk}: offer {self.offer_id} to bid {self.bid_id}"
