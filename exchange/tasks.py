"""Celery tasks: thin wrappers that call a service. All are safe to run twice."""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from django.conf import settings

# Imported to register their tasks with Celery, which finds only this module by itself
# (``autodiscover_tasks``): the event log's partitions, the lagging subscriptions, the live
# subscriptions, the webhooks and the nightly analytics.
from exchange import event_tasks as _event_tasks  # noqa: F401 (imported to register)
from exchange import subscription_lag_tasks as _subscription_lag_tasks  # noqa: F401 (ditto)
from exchange import subscription_tasks as _subscription_tasks  # noqa: F401 (ditto)
from exchange import webhook_tasks as _webhook_tasks  # noqa: F401 (ditto)
from exchange.analytics import tasks as _analytics_tasks  # noqa: F401 (ditto)
from exchange.pending import pending_clear, pending_renew, request_once
from exchange.selectors.dashboard import changes_stale
from exchange.services.closing import offers_close_due
from exchange.services.market_counts import market_counts_compact
from exchange.services.matching import BATCH_LIMIT, matching_cycle_run
from exchange.services.notifications import notifications_sweep


@shared_task(name="exchange.ping")
def ping(token: str) -> str:
    """Round-trip check used by /healthz and the smoke tests: echoes its argument."""
    return f"pong:{token}"


# What the sweep repairs is older than this: younger work is still on its way after commit.
SWEEP_AGE = dt.timedelta(seconds=5)


# While this key exists a cycle is queued or running and will look for pending changes
# again before it returns, so a new change need not queue another: that cycle will take it.
# It expires on its own in case the cycle never runs.
def _pending_key() -> str:
    return settings.CYCLE_PENDING_KEY


def matching_cycle_request() -> None:
    """Ask for a cycle after a committed change, unless one is queued or running.

    The change is committed before this runs, and a cycle task deletes the key before its
    last look for pending changes, so a change that finds the key is taken by that task.
    Without Redis it raises, and the caller's after-commit guard leaves it to the sweep.
    """
    request_once(_pending_key(), matching_cycle)


@shared_task(name="exchange.matching_cycle", ignore_result=True)
def matching_cycle() -> int:
    """Cycles back to back while changes are pending (on the matching queue, whose worker
    runs nothing else); returns how many changes they took.

    While it runs the pending key stays set, so the changes that arrive meanwhile queue
    no task: the next cycle of the loop takes them. When a cycle finds nothing, the key is
    deleted and one more cycle looks, for a change that found the key just before.
    """
    taken = 0
    while True:
        changes = matching_cycle_run(limit=BATCH_LIMIT).changes
        taken += changes
        if changes:
            pending_renew(_pending_key())
            continue
        pending_clear(_pending_key())
        changes = matching_cycle_run(limit=BATCH_LIMIT).changes
        taken += changes
        if not changes:
            return taken


@shared_task(name="exchange.sweep", ignore_result=True)
def sweep() -> dict:
    """Repair what a crash left behind: unprocessed changes and undelivered notifications;
    fold the markets' count rows."""

    if changes_stale(older_than=SWEEP_AGE):
        matching_cycle.delay()
    return {
        "pushed": notifications_sweep(older_than=SWEEP_AGE),
        "counts_folded": market_counts_compact(),
    }


@shared_task(name="exchange.close_due_offers", ignore_result=True)
def close_due_offers() -> int:
    """Close the offers whose ``closes_at`` has passed."""

    return len(offers_close_due())
