"""Celery tasks: thin wrappers that call a service. All are safe to run twice."""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.utils import timezone


@shared_task(name="exchange.ping")
def ping(token: str) -> str:
    """Round-trip check used by /healthz and the smoke tests: echoes its argument."""
    return f"pong:{token}"


@shared_task(name="exchange.matching_cycle", ignore_result=True)
def matching_cycle() -> int:
    """One matching cycle over the pending changes; queues another if it left some behind."""
    from exchange.services.matching import BATCH_LIMIT, matching_cycle_run

    report = matching_cycle_run(limit=BATCH_LIMIT)
    if report.changes >= BATCH_LIMIT:
        matching_cycle.delay()
    return report.changes


@shared_task(name="exchange.sweep", ignore_result=True)
def sweep() -> dict:
    """Repair what a crash left behind: unprocessed changes and undelivered notifications."""
    from exchange.models import Notification, OrderChange
    from exchange.services.notifications import notifications_push

    stale = timezone.now() - dt.timedelta(seconds=5)
    if OrderChange.objects.filter(processed_at=None, created_at__lte=stale).exists():
        matching_cycle.delay()
    ids = list(
        Notification.objects.filter(delivered_at=None, created_at__lte=stale)
        .order_by("id")
        .values_list("id", flat=True)[:5000]
    )
    return {"pushed": notifications_push(ids=ids) if ids else 0}


@shared_task(name="exchange.close_due_offers", ignore_result=True)
def close_due_offers() -> int:
    """Close the offers whose ``closes_at`` has passed."""
    from exchange.services.closing import offers_close_due

    return len(offers_close_due())


# The nightly analytics task lives with the analytics; importing it registers it with Celery.
from exchange.analytics import tasks as _analytics_tasks  # noqa: E402,F401
