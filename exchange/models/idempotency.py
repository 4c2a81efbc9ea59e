from __future__ import annotations

from django.conf import settings
from django.db import models


class IdempotencyKey(models.Model):
    """The first response to a create request sent with an ``Idempotency-Key`` header.

    A repeat with the same key and the same body gets this response again; the same key with
    another body is refused. Keys are per user and per endpoint.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    endpoint = models.CharField(max_length=100)
    body_hash = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField(null=True)
    response = models.JSONField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "endpoint", "key"], name="idempotency_unique_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.key}"
