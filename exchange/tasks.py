"""Celery tasks: thin wrappers that call a service. All are safe to run twice."""

from __future__ import annotations

import datetime as dt
import time

from celery import shared_task
from django.conf import settings

# Imported to register their tasks with Celery, which finds only this module by itself
# (``autodiscover_tasks``): the event log's partitions, the lagging subscriptions, the
# webhooks and the nightly analytics.
from exchange import event_tasks as _event_tasks  # noqa: F401 (imported to register)
from exchange import subscription_lag_tasks as _subscription_lag_tasks  # noqa: F401 (ditto)
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


# Markets are partitioned across matching workers (SPEC 9, "Scale-out"): market ``m``'s
# cycles run on the queue of partition ``m % MATCHING_PARTITIONS``, and a worker consumes the
# queues of the partitions it is given (``exchange/celery.py``). Each market's cycles
# serialize on its own lock, so two workers on one partition, or a change of the setting
# while tasks are queued, never let two cycles of one market overlap.


def partitions() -> int:
    return max(1, int(settings.MATCHING_PARTITIONS))


def market_partition(market_id: int, count: int | None = None) -> int:
    return market_id % (count or partitions())


def matching_queue(partition: int) -> str:
    """The queue of ``partition``'s cycles."""
    return f"{settings.MATCHING_QUEUE}.{partition}"


# While a partition's key exists a cycle task of that partition is queued or running and
# will look for pending changes again before it returns, so a new change of one of its
# markets need not queue another: that task will take it. It expires on its own in case the
# task never runs.
def _pending_key(partition: int, count: int) -> str:
    return f"{settings.CYCLE_PENDING_KEY}:{partition}/{count}"


# A task that has run cycles this long queues itself again and returns, so that a worker
# consuming several partitions takes the others' tasks in between (its key stays set).
TASK_SECONDS = 1.0


def matching_cycle_request(market_id: int) -> None:
    """Ask for a cycle of ``market_id``'s partition after a committed change, unless one is
    queued or running.

    The change is committed before this runs, and a cycle task deletes the key before its
    last look for pending changes, so a change that finds the key is taken by that task.
    Without Redis it raises, and the caller's after-commit guard leaves it to the sweep.
    """
    count = partitions()
    partition = market_partition(market_id, count)
    request_once(
        _pending_key(partition, count),
        matching_cycle,
        partition,
        count,
        queue=matching_queue(partition),
    )


def matching_cycle_enqueue(partition: int, count: int) -> None:
    """Queue a cycle task of ``partition`` (of ``count``) on that partition's queue."""
    matching_cycle.apply_async(args=[partition, count], queue=matching_queue(partition))


@shared_task(name="exchange.matching_cycle", ignore_result=True)
def matching_cycle(partition: int = 0, count: int = 1) -> int:
    """Cycles of the markets of ``partition`` (of ``count``) back to back while their changes
    are pending (on the partition's queue, whose workers run nothing else); returns how
    many changes they took.

    While it runs the partition's pending key stays set, so the changes that arrive
    meanwhile queue no task: the next cycle of the loop takes them. When a cycle finds
    nothing, the key is deleted and one more cycle looks, for a change that found the key
    just before. After ``TASK_SECONDS`` of cycles it queues itself again instead (the key
    still set) and returns.
    """
    taken = 0
    started = time.monotonic()
    while True:
        changes = matching_cycle_run(
            limit=BATCH_LIMIT, partition=partition, partitions=count
        ).changes
        taken += changes
        if changes:
            pending_renew(_pending_key(partition, count))
            if time.monotonic() - started < TASK_SECONDS:
                continue
            try:
                matching_cycle_enqueue(partition, count)
                return taken
            except Exception:  # the broker is away: carry on here
                continue
        pending_clear(_pending_key(partition, count))
        changes = matching_cycle_run(
            limit=BATCH_LIMIT, partition=partition, partitions=count
        ).changes
        taken += changes
        if not changes:
            return taken


@shared_task(name="exchange.sweep", ignore_result=True)
def sweep() -> dict:
    """Repair what a crash left behind: unprocessed changes and undelivered notifications;
    fold the markets' count rows."""

    count = partitions()
    for partition in changes_stale(older_than=SWEEP_AGE, partitions=count):
        matching_cycle_enqueue(partition, count)
    return {
        "pushed": notifications_sweep(older_than=SWEEP_AGE),
        "counts_folded": market_counts_compact(),
    }


@shared_task(name="exchange.close_due_offers", ignore_result=True)
def close_due_offers() -> int:
    """Close the offers whose ``closes_at`` has passed."""

    return len(offers_close_due())
