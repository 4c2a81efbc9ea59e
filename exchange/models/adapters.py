"""What an adapter import remembers (SPEC 8.2): which order a feed's ``ref`` became."""

from __future__ import annotations

from django.conf import settings
from django.db import models

REF_LENGTH = 100


class ImportRef(models.Model):
    """The order that a row with ``ref`` created for ``user`` on one side of one market.

    Re-importing a row with the same ref finds this row and creates nothing. The unique
    constraint, not a lookup, is what makes the ref count once when two imports of the same
    feed run at the same time.
    """

    class Side(models.TextChoices):
        OFFER = "offer", "Offer"
        BID = "bid", "Bid"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    market = models.ForeignKey("exchange.Market", on_delete=models.CASCADE, related_name="+")
    side = models.CharField(max_length=5, choices=Side.choices)
    ref = models.CharField(max_length=REF_LENGTH)
    offer = models.ForeignKey(
        "exchange.Offer", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    bid = models.ForeignKey(
        "exchange.Bid", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "market", "side", "ref"], name="import_ref_unique"
            ),
            # Exactly the order of its side, never both nor none.
            models.CheckConstraint(
                condition=(
                    models.Q(side="offer", offer__isnull=False, bid__isnull=True)
                    | models.Q(side="bid", bid__isnull=False, offer__isnull=True)
                ),
                name="import_ref_one_order",
            ),
            models.CheckConstraint(condition=~models.Q(ref=""), name="import_ref_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.side} {self.ref}"

    @property
    def order_id(self) -> int:
        order_id = self.offer_id if self.side == self.Side.OFFER else self.bid_id
        assert order_id is not None  # import_ref_one_order
        return order_id
