"""``request_once`` sets a pending key and queues a task in one call to Redis, with a message
that is Celery's own but for its ids; where a template cannot stand for Celery it sends
through Celery (exchange/pending.py)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import current_app
from celery._state import _task_stack

from exchange import pending
from exchange.pending import PENDING_TTL, request_once, template_of
from exchange.redis_clients import redis_client
from exchange.tasks import matching_cycle

ID_FIELDS = (("headers", "id"), ("headers", "root_id"), ("properties", "correlation_id"))


@pytest.fixture
def queue() -> Iterator[str]:
    """A queue and a pending key of this test's own, emptied afterwards."""
    name = f"test-pending.{uuid.uuid4().hex}"
    yield name
    redis_client().delete(name, f"{name}:key", f"_kombu.binding.{name}")


def queued(queue: str) -> list[dict[str, Any]]:
    """The messages waiting on ``queue``, oldest first."""
    return [json.loads(raw) for raw in reversed(redis_client().lrange(queue, 0, -1))]


def ids_masked(message: dict[str, Any]) -> dict[str, Any]:
    message = json.loads(json.dumps(message))
    for part, field in (*ID_FIELDS, ("properties", "delivery_tag")):
        message[part][field] = "?"
    return message


def test_the_message_is_celerys_own_with_new_ids(queue):
    matching_cycle.apply_async(args=[1, 2], queue=queue)
    assert request_once(f"{queue}:key", matching_cycle, 1, 2, queue=queue) is True
    celerys, ours = queued(queue)
    assert ids_masked(ours) == ids_masked(celerys)
    # the task's id is its root and correlation id, as in Celery's; the tag is another uuid
    task_id = ours["headers"]["id"]
    assert [ours[part][field] for part, field in ID_FIELDS] == [task_id] * 3
    tag = ours["properties"]["delivery_tag"]
    assert str(uuid.UUID(task_id)) == task_id and str(uuid.UUID(tag)) == tag
    assert len({task_id, tag, celerys["headers"]["id"], celerys["properties"]["delivery_tag"]}) == 4
    assert ours["properties"]["delivery_info"] == {"exchange": "", "routing_key": queue}


def test_a_pending_key_queues_nothing_until_it_is_gone(queue):
    key = f"{queue}:key"
    assert request_once(key, matching_cycle, 0, 1, queue=queue) is True
    assert 0 < redis_client().ttl(key) <= PENDING_TTL
    assert request_once(key, "exchange.matching_cycle", 0, 1, queue=queue) is False
    assert len(queued(queue)) == 1
    redis_client().delete(key)
    assert request_once(key, matching_cycle, 0, 1, queue=queue) is True
    first, second = queued(queue)
    assert first["headers"]["id"] != second["headers"]["id"]
    assert first["properties"]["delivery_tag"] != second["properties"]["delivery_tag"]
    # a task's name and the task itself give the same message
    assert ids_masked(first) == ids_masked(second)


def test_the_scratch_queue_is_gone_after_the_template_is_made(queue):
    pending._templates.pop((id(matching_cycle), (3, 4), queue), None)
    before = set(redis_client().keys(f"{queue}*"))
    assert request_once(f"{queue}:key", matching_cycle, 3, 4, queue=queue) is True
    assert set(redis_client().keys(f"{queue}*")) - before == {queue, f"{queue}:key"}
    assert redis_client().keys(f"*{queue}.template*") == []
    assert (id(matching_cycle), (3, 4), queue) in pending._templates


def test_inside_a_worker_task_celery_sends_it_with_its_parent(queue):
    parent = matching_cycle
    parent.push_request(id="parent-task", root_id="root-task", called_directly=False)
    _task_stack.push(parent)
    try:
        assert request_once(f"{queue}:key", matching_cycle, 0, 1, queue=queue) is True
    finally:
        _task_stack.pop()
        parent.pop_request()
    (message,) = queued(queue)
    assert message["headers"]["parent_id"] == "parent-task"
    assert message["headers"]["root_id"] == "root-task"


def test_eager_tasks_are_left_to_celery(queue, monkeypatch):
    monkeypatch.setattr(current_app.conf, "task_always_eager", True)
    assert pending.templates_apply() is False
    monkeypatch.setattr(current_app.conf, "task_always_eager", False)
    assert pending.templates_apply() is True
    monkeypatch.setattr(current_app.conf, "broker_url", "redis://127.0.0.1:1/9")
    assert pending.templates_apply() is False


def celery_message(queue: str) -> dict[str, Any]:
    """A message Celery sent to a scratch queue of ``queue``, as a template is made from."""
    scratch = pending.scratch_queue(queue)
    matching_cycle.apply_async(args=[0, 1], queue=scratch)
    (raw,) = redis_client().lrange(scratch, 0, -1)
    redis_client().delete(scratch, f"_kombu.binding.{scratch}")
    return json.loads(raw)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda m: m["headers"].update(parent_id="p"), id="a parent"),
        pytest.param(lambda m: m["headers"].update(root_id="r"), id="another root"),
        pytest.param(lambda m: m["properties"].update(correlation_id="c"), id="a correlation"),
        pytest.param(lambda m: m["properties"].update(priority=3), id="a priority"),
        pytest.param(lambda m: m["properties"]["delivery_info"].update(exchange="x"), id="exch"),
        pytest.param(
            lambda m: m["properties"]["delivery_info"].update(routing_key="other"), id="queue"
        ),
        pytest.param(lambda m: m["properties"].pop("delivery_tag"), id="no tag"),
        pytest.param(lambda m: m["headers"].update(argsrepr="['@task-id@']"), id="a marker"),
    ],
)
def test_a_message_of_another_shape_makes_no_template(queue, change):
    message = celery_message(queue)
    assert template_of(json.dumps(message), queue) is not None
    change(message)
    assert template_of(json.dumps(message), queue) is None


def test_a_message_of_another_shape_is_celerys_to_send_and_none_read_back_is_tried_again(
    queue, monkeypatch
):
    slot = (id(matching_cycle), (5, 6), queue)
    monkeypatch.setattr(pending, "raw_capture", lambda *_: None)
    assert request_once(f"{queue}:key", matching_cycle, 5, 6, queue=queue) is True
    assert slot not in pending._templates
    assert len(queued(queue)) == 1  # sent by Celery
    monkeypatch.setattr(pending, "raw_capture", lambda *_: json.dumps({"headers": {}}))
    redis_client().delete(f"{queue}:key")
    assert request_once(f"{queue}:key", matching_cycle, 5, 6, queue=queue) is True
    assert pending._templates[slot] is None
    assert len(queued(queue)) == 2
    pending._templates.pop(slot)
