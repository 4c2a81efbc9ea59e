"""Celery tasks: thin wrappers that call a service. All are safe to run twice."""

from __future__ import annotations

import contextlib
import datetime as dt

from celery import shared_task
from django.conf import settings

from exchange.redis_clients import redis_client
from exchange.selectors.dashboard import changes_stale
from exchange.services.closing import offers_close_due
from exchange.services.matching import BATCH_LIMIT, matching_cycle_run
from exchange.services.notifications import notifications_sweep


@shared_task(name="exchange.ping")
def ping(token: str) -> str:
    """Round-trip check used by /healthz and the smoke tests: echoes its argument."""
    return f"pong:{token}"


# What the sweep repairs is older than this: younger work is still on its way after commit.
SWEEP_AGE = dt.timedelta(seconds=5)


# While this key exists a cycle is queued and has not started yet, so a new change need not
# queue another: that cycle will take it. It expires on its own in case the cycle never runs.
def _pending_key() -> str:
    return settings.CYCLE_PENDING_KEY


def matching_cycle_request() -> None:
    """Ask for a cycle after a committed change, unless one is queued and not yet started.

    The change is committed before this runs and a queued cycle reads its batch only
    after deleting the key, so a change that finds the key is in that cycle's batch.
    Without Redis it raises, and the caller's after-commit guard leaves it to the sweep.
    """
    if redis_client().set(_pending_key(), "1", nx=True, ex=10):
        matching_cycle.delay()


@shared_task(name="exchange.matching_cycle", ignore_result=True)
def matching_cycle() -> int:
    """One matching cycle over the pending changes; queues another if it left some behind."""

    # Without Redis the key expires by itself; the cycle must run anyway.
    with contextlib.suppress(Exception):
        redis_client().delete(_pending_key())
    report = matching_cycle_run(limit=BATCH_LIMIT)
    if report.changes >= BATCH_LIMIT:
        matching_cycle.delay()
    return report.changes


@shared_task(name="exchange.sweep", ignore_result=True)
def sweep() -> dict:
    """Repair what a crash left behind: unprocessed changes and undelivered notifications."""

    if changes_stale(older_than=SWEEP_AGE):
        matching_cycle.delay()
    return {"pushed": notifications_sweep(older_than=SWEEP_AGE)}


@shared_task(name="exchange.close_due_offers", ignore_result=True)
def close_due_offers() -> int:
    """Close the offers whose ``closes_at`` has passed."""

    return len(offers_close_due())


# The nightly analytics task lives with the analytics; importing it registers it with Celery.
# So does the event log's partition task.
from exchange import event_tasks as _event_tasks  # noqa: E402,F401
from exchange.analytics import tasks as _analytics_tasks  # noqa: E402,F401
