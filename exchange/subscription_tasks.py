"""The dissemination shadow's Celery task (``exchange.dissemination.live``), on the default
queue: never on the matching queue. The live subscriptions themselves are advanced by the
subscription engine's processes (``exchange/subscription_engine``), not by a task."""

from __future__ import annotations

import contextlib

from celery import shared_task

from exchange.dissemination.live import dissemination_round
from exchange.redis_clients import redis_client
from exchange.services.subscriptions import (
    SHADOW_TASK,
    dissemination_shadow_request,
    shadow_pending_key,
)


@shared_task(name=SHADOW_TASK, ignore_result=True)
def dissemination_shadow_task() -> bool:
    """One round of the dissemination optimizer's shadow over the range watches (it
    chooses, is measured and logs for the staff dashboard, and delivers nothing); asks for
    another while it is behind the log. Asked for after each append, and by beat."""
    # Cleared before reading: an append committed after this reads as a new request.
    with contextlib.suppress(Exception):
        redis_client().delete(shadow_pending_key())
    more = dissemination_round()
    if more:
        # Without Redis the next round is beat's (every 5 s).
        with contextlib.suppress(Exception):
            dissemination_shadow_request()
    return more
