"""The live subscriptions' Celery task (SPEC 8.3), on the default queue: never on the
matching queue, so replaying a long history never delays a matching cycle."""

from __future__ import annotations

import contextlib

from celery import shared_task
from django.conf import settings

from exchange.dissemination.live import dissemination_round
from exchange.redis_clients import redis_client
from exchange.services.subscription_pass import subscriptions_advance_together
from exchange.services.subscriptions import (
    ADVANCE_TASK,
    advance_pending_key,
    subscriptions_advance_request,
)


@shared_task(name=ADVANCE_TASK, ignore_result=True)
def subscriptions_advance_task() -> bool:
    """One pass over the subscriptions behind the log, all of them together
    (``services/subscription_pass.py``: the log read once per stretch, live ones through the
    matching index); asks for another while some have more to read (a long history goes in
    bounded steps, other tasks run in between). Asked for after each append to the log and
    each registration, and by beat."""
    # Cleared before reading: an append committed after this reads as a new request.
    with contextlib.suppress(Exception):
        redis_client().delete(advance_pending_key())
    # With the subscription engine on, its processes advance the subscriptions.
    more = False if settings.SUBSCRIPTION_ENGINE else subscriptions_advance_together()
    more = _dissemination_follow() or more
    if more:
        # Without Redis the next round is beat's (every 5 s): the work is in the rows.
        with contextlib.suppress(Exception):
            subscriptions_advance_request()
    return more


def _dissemination_follow() -> bool:
    """After the deliveries, the dissemination optimizer follows the same changes for the
    range watches (``exchange.dissemination.live``): it chooses, is measured and logs
    for the staff dashboard, and delivers nothing. True while it is behind the log."""
    return dissemination_round()
