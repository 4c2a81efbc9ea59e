"""Enqueue once: a Redis "pending" key in front of a Celery task.

While the key exists a task is queued (or running and will look again before it returns),
so a new request need not queue another: that task will take the work. The key expires on
its own (``PENDING_TTL``) in case the task is lost. Without Redis these raise, except where
said; the callers' after-commit guards leave the work to beat's rounds.
"""

from __future__ import annotations

import contextlib

from celery import Task, current_app

from exchange.redis_clients import redis_client

# Seconds a pending key lives without its task renewing it.
PENDING_TTL = 10


def request_once(key: str, task: Task | str, *args: object, queue: str | None = None) -> bool:
    """Queue ``task`` (a task, or a task's registered name) with ``args``, on ``queue`` if
    given (else the task's own), unless ``key`` says one is pending already; True if this
    call queued it."""
    if not redis_client().set(key, "1", nx=True, ex=PENDING_TTL):
        return False
    if isinstance(task, str):
        current_app.send_task(task, args=list(args), queue=queue)
    else:
        task.apply_async(args=list(args), queue=queue)
    return True


def pending_renew(key: str) -> None:
    """Keep ``key`` for another ``PENDING_TTL`` (a task still working); without Redis the key
    expires by itself."""
    with contextlib.suppress(Exception):
        redis_client().set(key, "1", ex=PENDING_TTL)


def pending_clear(key: str) -> None:
    """Let the next request queue a task again; without Redis the key expires by itself."""
    with contextlib.suppress(Exception):
        redis_client().delete(key)
