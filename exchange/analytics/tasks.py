"""The nightly analytics as a Celery task (scheduled by beat, see CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

import datetime as dt

from celery import shared_task

from exchange.analytics.services import market_days_refresh, yesterday


@shared_task(name="exchange.spark_analytics", ignore_result=True)
def spark_analytics(day: str | None = None) -> int:
    """Compute one UTC day's market analytics (default: yesterday); safe to run twice.

    Spark runs inside the worker process and its session stays up for the next night.
    """
    rows = market_days_refresh(day=dt.date.fromisoformat(day) if day else yesterday())
    return len(rows)
