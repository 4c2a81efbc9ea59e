"""Waking the subscription engine (``services/subscriptions.py``): each append publishes a
wake-up for the engine's processes and asks for one dissemination shadow round while one
is queued; each registration, pause, resume and deletion publishes a change. The shadow's
task runs on the default queue, and beat asks for it as a safety net."""

from __future__ import annotations

import pytest

from exchange import pending, subscription_tasks
from exchange.redis_clients import redis_client
from exchange.services import subscriptions as service
from exchange.services.subscriptions import (
    ENGINE_WAKE_CHANNEL,
    SHADOW_TASK,
    WAKE_LOG,
    WAKE_SUBSCRIPTIONS,
    shadow_pending_key,
)
from tests.factories import UserFactory
from tests.subscriptions.log import append, trade


@pytest.fixture
def sent_tasks(monkeypatch):
    calls = []
    monkeypatch.setattr(
        pending.current_app, "send_task", lambda name, **options: calls.append(name)
    )
    redis_client().delete(shadow_pending_key())
    yield calls
    redis_client().delete(shadow_pending_key())


@pytest.fixture
def wakes():
    """The wake-ups published on the engine's channel, as its processes receive them."""
    pubsub = redis_client().pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(ENGINE_WAKE_CHANNEL)
    pubsub.get_message(timeout=1.0)  # the subscription's confirmation

    def taken() -> list[str]:
        got = []
        while (message := pubsub.get_message(timeout=0.5)) is not None:
            got.append(message["data"])
        return got

    yield taken
    pubsub.close()


@pytest.mark.django_db
def test_appends_wake_the_engine_and_ask_for_one_shadow_round_while_one_is_queued(
    sent_tasks, wakes, django_capture_on_commit_callbacks, monkeypatch
):
    # When a subscription registers and two appends commit
    owner = UserFactory()
    with django_capture_on_commit_callbacks(execute=True):
        sub = service.subscription_create(owner=owner, query="SELECT price")
    with django_capture_on_commit_callbacks(execute=True):
        append([trade("1.00")])
    with django_capture_on_commit_callbacks(execute=True):
        append([trade("1.10")])
    # Then the engine is told of the change, then of each append
    assert wakes() == [WAKE_SUBSCRIPTIONS, WAKE_LOG, WAKE_LOG]
    # and one shadow round is queued: the second request found it pending
    assert sent_tasks == [SHADOW_TASK]
    # When the round runs, it clears the request first, so the next append asks again
    monkeypatch.setattr(subscription_tasks, "dissemination_round", lambda: False)
    assert subscription_tasks.dissemination_shadow_task() is False
    with django_capture_on_commit_callbacks(execute=True):
        append([trade("1.20")])
    assert sent_tasks == [SHADOW_TASK, SHADOW_TASK]
    # and a deletion is a change the engine is told of
    with django_capture_on_commit_callbacks(execute=True):
        service.subscription_delete(owner=owner, subscription_id=sub.pk)
    assert wakes() == [WAKE_LOG, WAKE_SUBSCRIPTIONS]


@pytest.mark.django_db
def test_the_shadow_off_queues_no_task(sent_tasks, settings, django_capture_on_commit_callbacks):
    settings.DISSEMINATION_SHADOW = False
    with django_capture_on_commit_callbacks(execute=True):
        append([trade("1.00")])
    assert sent_tasks == []


def test_the_shadow_task_is_not_routed_to_the_matching_queue_and_beat_asks_for_it(settings):
    assert SHADOW_TASK not in settings.CELERY_TASK_ROUTES
    assert any(e["task"] == SHADOW_TASK for e in settings.CELERY_BEAT_SCHEDULE.values())
