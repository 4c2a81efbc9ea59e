"""Webhooks through the real pipeline (issue 39): the Celery worker advances the
subscription, beat's round leases the webhook and a delivery task POSTs to a receiver on
127.0.0.1; a receiver slower than the timeout fails (timed out, retried later) while another
subscription's receiver gets its notification. (That the two run in separate tasks is the
design; this test shows the outcome, not the overlap, which would need a wall clock.)"""

from __future__ import annotations

import time

import pytest

from exchange.models import SubscriptionWebhook
from exchange.services.subscriptions import subscription_create
from exchange.services.webhooks import subscription_webhook_set, webhook_secret_rotate
from tests.factories import UserFactory
from tests.stack.test_matching_worker import wait_for
from tests.subscriptions.log import append, trade
from tests.subscriptions.test_webhooks import Receiver

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]
TRADES = "SELECT price WHERE type = 'trade'"


@pytest.fixture
def beat(live_stack):
    live_stack.start_beat()
    yield
    live_stack.processes.pop("beat").stop()


def test_beat_and_the_worker_deliver_and_a_slow_receiver_times_out_alone(live_stack, beat):
    alice = UserFactory(username="alice")
    secret = webhook_secret_rotate(owner=alice)
    slow, fast = Receiver(secret, delay=6.0), Receiver(secret)
    try:
        first = subscription_create(owner=alice, query=TRADES, name="slow")
        subscription_webhook_set(
            owner=alice, subscription_id=first.pk, url=slow.url, from_start=True
        )
        second = subscription_create(owner=alice, query=TRADES, name="fast")
        subscription_webhook_set(
            owner=alice, subscription_id=second.pk, url=fast.url, from_start=True
        )

        append([trade("1.10", trade_id=1)])

        # The fast receiver gets its notification, once
        wait_for(lambda: fast.answered.is_set(), "the fast receiver's delivery", timeout=60)
        assert list(fast.kept) == [f"{second.pk}:1"]
        hook = wait_for(
            lambda: SubscriptionWebhook.objects.filter(subscription=second, delivered_n=1).first(),
            "the fast one's state",
        )
        assert (hook.attempts, hook.last_error) == (0, "")

        # The slow one timed out: a failure, retried later, counted
        slow_hook = wait_for(
            lambda: SubscriptionWebhook.objects.filter(subscription=first, attempts=1).first(),
            "the slow one's failure",
            timeout=60,
        )
        assert slow_hook.delivered_n == 0
        assert slow_hook.last_error.startswith("#1: ")
        assert "timed out" in slow_hook.last_error
        assert slow_hook.next_retry_at is not None
    finally:
        time.sleep(0.1)
        slow.close()
        fast.close()
