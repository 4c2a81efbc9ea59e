"""Webhooks of subscriptions (issue 39): each notification of a subscription POSTed, signed,
to a URL its owner chose.

Delivery reads the outbox (``SubscriptionNotification``) after ``delivered_n``, whatever
process wrote it, so the writer knows nothing of webhooks. ``delivered_n`` only moves
forward, one notification at a time, after the receiver answered 2xx: a notification is
sent at least once, and the ``(subscription, n)`` header lets the receiver drop a repeat.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class WebhookSecret(models.Model):
    """A user's signing secret (HMAC-SHA256 of each body): shown once when created or
    rotated, kept here because every delivery signs with it."""

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    secret = models.CharField(max_length=100)
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"webhook secret of user {self.owner_id}"


class SubscriptionWebhook(models.Model):
    subscription = models.OneToOneField(
        "exchange.Subscription", on_delete=models.CASCADE, related_name="webhook"
    )
    url = models.URLField(max_length=2000)
    # The last n the receiver acknowledged (2xx); the next one sent is delivered_n + 1.
    delivered_n = models.IntegerField(default=0)
    # Failed tries of delivered_n + 1 in a row; 0 when the last try succeeded.
    attempts = models.IntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    # When the next try of a failed one is due (null: due now if there is one to send).
    next_retry_at = models.DateTimeField(null=True, blank=True)
    # Gave up after WEBHOOK_MAX_ATTEMPTS failures; setting the URL again starts over.
    stopped = models.BooleanField(default=False)
    # A worker holds the delivery until then (a lease, so a slow receiver holds no lock).
    lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(delivered_n__gte=0, attempts__gte=0),
                name="webhook_counters_not_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(url__startswith="http://")
                | models.Q(url__startswith="https://"),
                name="webhook_url_http",
            ),
        ]

    def __str__(self) -> str:
        return f"webhook of subscription {self.subscription_id}"
