"""The event log's Celery task (scheduled by beat, see CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

from exchange.services.event_partitions import event_partitions_ensure


@shared_task(name="exchange.event_partitions", ignore_result=True)
def event_partitions() -> int:
    """Create the event log's partitions of today and the days ahead; safe to run twice."""
    return len(event_partitions_ensure())
