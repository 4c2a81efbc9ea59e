"""Waking the subscription engine (``services/subscriptions.py``): each append publishes a
wake-up for the engine's processes and each registration, pause, resume and deletion
publishes a change. No task follows the log: form 4 watches are delivered by the engine's
own dissemination (``matching/dissemination/hosted.py``), not by a shadow beside it."""

from __future__ import annotations

import pytest

from exchange import pending
from exchange.redis_clients import redis_client
from exchange.services import subscriptions as service
from exchange.services.subscriptions import ENGINE_WAKE_CHANNEL, WAKE_LOG, WAKE_SUBSCRIPTIONS
from tests.factories import UserFactory
from tests.subscriptions.log import append, trade


@pytest.fixture
def sent_tasks(monkeypatch):
    calls = []
    monkeypatch.setattr(
        pending.current_app, "send_task", lambda name, **options: calls.append(name)
    )
    return calls


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
def test_appends_and_changes_wake_the_engine_and_queue_no_task(
    sent_tasks, wakes, django_capture_on_commit_callbacks
):
    # When a watch registers and two appends commit
    owner = UserFactory()
    with django_capture_on_commit_callbacks(execute=True):
        sub = service.subscription_create(
            owner=owner,
            query="SELECT MIN(ask) FROM offers WHERE subject = 'office.supplies.pencils'",
        )
    with django_capture_on_commit_callbacks(execute=True):
        append([trade("1.00")])
    with django_capture_on_commit_callbacks(execute=True):
        append([trade("1.10")])
    # Then the engine is told of the change, then of each append, and no task is queued
    assert wakes() == [WAKE_SUBSCRIPTIONS, WAKE_LOG, WAKE_LOG]
    assert sent_tasks == []
    # and a deletion is a change the engine is told of
    with django_capture_on_commit_callbacks(execute=True):
        service.subscription_delete(owner=owner, subscription_id=sub.pk)
    assert wakes() == [WAKE_SUBSCRIPTIONS]


def test_no_task_or_beat_round_follows_the_log_for_watches(settings):
    tasks = {e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()}
    assert not any("dissemination" in task for task in tasks)
    assert not hasattr(settings, "DISSEMINATION_SHADOW")
