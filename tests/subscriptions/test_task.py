"""The advance task: asked for after each append and each registration (once while one is
queued), on the default queue; one worker per subscription at a time."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from exchange import pending
from exchange.redis_clients import redis_client
from exchange.services import subscriptions as service
from exchange.services.subscriptions import ADVANCE_TASK, advance_pending_key
from exchange.subscription_tasks import subscriptions_advance_task
from tests.factories import UserFactory
from tests.subscriptions.log import append, outbox, trade


@pytest.fixture
def sent_tasks(monkeypatch):
    calls = []
    monkeypatch.setattr(pending.current_app, "send_task", lambda name: calls.append(name))
    redis_client().delete(advance_pending_key())
    yield calls
    redis_client().delete(advance_pending_key())


@pytest.mark.django_db
def test_appends_and_registrations_ask_for_one_advance_while_one_is_queued(
    sent_tasks, django_capture_on_commit_callbacks
):
    # When a subscription registers and two appends commit
    with django_capture_on_commit_callbacks(execute=True):
        sub = service.subscription_create(owner=UserFactory(), query="SELECT price")
    with django_capture_on_commit_callbacks(execute=True):
        append([trade("1.00")])
    with django_capture_on_commit_callbacks(execute=True):
        append([trade("1.10")])
    # Then one task is queued: the later requests found it pending
    assert sent_tasks == [ADVANCE_TASK]

    # When the task runs, it clears the request first and feeds the subscription
    with django_capture_on_commit_callbacks(execute=True):
        assert subscriptions_advance_task() is False
    assert [line["seq"] for line in outbox(sub)] == [1, 2]
    # and the next append asks again
    with django_capture_on_commit_callbacks(execute=True):
        append([trade("1.20")])
    assert sent_tasks == [ADVANCE_TASK, ADVANCE_TASK]


def test_the_task_is_not_routed_to_the_matching_queue(settings):
    assert ADVANCE_TASK not in settings.CELERY_TASK_ROUTES
    assert any(e["task"] == ADVANCE_TASK for e in settings.CELERY_BEAT_SCHEDULE.values())


@pytest.mark.django_db(transaction=True)
def test_a_subscription_held_by_one_worker_is_skipped_by_another(sent_tasks):
    # Given a committed subscription with an event to read
    sub = service.subscription_create(owner=UserFactory(), query="SELECT price")
    append([trade("1.00")])
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    other = psycopg.connect(**params)
    try:
        # When another worker holds its row
        other.execute("SELECT id FROM exchange_subscription WHERE id = %s FOR UPDATE", [sub.pk])
        # Then this worker skips it and writes nothing
        assert service.subscription_advance(subscription_id=sub.pk) is None
        assert outbox(sub) == []
        other.rollback()
        # and takes it once it is free, even while its owner's row is locked (by a login,
        # say): only the subscription's row is locked
        other.execute("SELECT id FROM auth_user WHERE id = %s FOR UPDATE", [sub.owner_id])
        step = service.subscription_advance(subscription_id=sub.pk)
        assert step == service.Step(written=1, ended=False, more=False)
    finally:
        other.close()
