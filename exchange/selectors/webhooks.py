"""Reading subscription webhooks: whether a user has a signing secret (never the secret)."""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.models import User

from exchange.models import WebhookSecret


def webhook_secret_created(*, owner: User) -> dt.datetime | None:
    """When ``owner``'s signing secret was made (or last rotated); None if they have none."""
    return WebhookSecret.objects.filter(owner=owner).values_list("created_at", flat=True).first()
