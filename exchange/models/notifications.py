from __future__ import annotations

from django.conf import settings
from django.db import models


class Notification(models.Model):
    """The outbox: written in the matching transaction, pushed over Channels after commit.

    Personal rows have a ``recipient`` and go to that user's ``me`` stream; public rows have
    none and go to the market's stream (and the offer's). The id is the sequence number a
    client resumes after, so a reconnecting client misses nothing.
    """

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    market = models.ForeignKey("exchange.Market", on_delete=models.CASCADE, related_name="+")
    offer = models.ForeignKey(
        "exchange.Offer", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    type = models.CharField(max_length=30)
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["recipient", "id"]),
            models.Index(
                fields=["id"],
                name="notification_undelivered",
                condition=models.Q(delivered_at=None),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} #{self.pk}"
