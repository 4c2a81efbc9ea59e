"""The lagging subscriptions' round (issue 39), scheduled by beat on the default queue:
``services/subscription_lag.py`` says what it sends."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from exchange.services.subscription_lag import LAG_TASK, subscriptions_lag_round


@shared_task(name=LAG_TASK, ignore_result=True)
def subscriptions_lag_task() -> None:
    subscriptions_lag_round(now=timezone.now())
