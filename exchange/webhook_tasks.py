"""The webhooks' Celery tasks (issue 39), on the default queue: a round, run by beat every
``WEBHOOK_ROUND_SECONDS``, leases the webhooks with a notification due and queues one
delivery task for each, so a slow receiver holds one task and never the others' deliveries
(``services/webhooks.py``). A task holds a webhook for at most ``WEBHOOK_RUN_SECONDS`` plus
one POST's ``WEBHOOK_DEADLINE_SECONDS``, less than the claim's ``WEBHOOK_LEASE_SECONDS``, so
no round queues a second task for it meanwhile unless it waited in the queue for most of the
lease. (No Celery time limit, as no task here has one: the deadline already ends every wait
on the receiver.)"""

from __future__ import annotations

from celery import shared_task

from exchange.services.webhooks import webhook_deliver, webhooks_claim

ROUND_TASK = "exchange.webhooks_round"
DELIVER_TASK = "exchange.webhook_deliver"


@shared_task(name=ROUND_TASK, ignore_result=True)
def webhooks_round_task() -> int:
    ids = webhooks_claim()
    for webhook_id in ids:
        webhook_deliver_task.delay(webhook_id)
    return len(ids)


@shared_task(name=DELIVER_TASK, ignore_result=True)
def webhook_deliver_task(webhook_id: int) -> int:
    return webhook_deliver(webhook_id=webhook_id).delivered
