"""Enqueue once: a Redis "pending" key in front of a Celery task.

While the key exists a task is queued (or running and will look again before it returns),
so a new request need not queue another: that task will take the work. The key expires on
its own (``PENDING_TTL``) in case the task is lost. Without Redis these raise, except where
said; the callers' after-commit guards leave the work to beat's rounds.

Setting the key and queueing the task are one call to Redis (``_PUSH_ONCE``, a script): a
bid's request asks for a matching cycle after it commits, and through Celery that was the
key's ``SET`` and then ``apply_async``, whose message building (the headers, the body's
JSON and base64, kombu's producer, its connection and retry wrappers) and ``LPUSH`` were
about a sixth of the CPU of a ``POST /api/v1/bids/`` (py-spy ``--gil`` on
``ops/bench_live.py --request-costs``, AMD EPYC, issue 36) when a cycle had to be queued;
under a steady load the running task keeps its key set, and the script only answers that
(``docs/benchmarks.md``, *The third pass*). The message is still Celery's
own: the first time a process queues a task with given arguments on a given queue, it has
Celery publish that task to a queue of its own, reads the message back and keeps it as a
template (``_template_for``); later requests copy it with new ids (the task's, which Celery
also uses as the root id and the correlation id, and the delivery tag kombu gives each
message), which is all that differs from one of Celery's messages to the next in a
process. tests/exchange/test_pending.py compares the two. Where a template cannot stand
for Celery (a broker other than this Redis, eager tasks, a call from inside a task, whose
message names its parent), the task is queued through Celery as before.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import uuid
from dataclasses import dataclass
from typing import cast

from celery import Task, current_app
from celery._state import get_current_worker_task
from django.conf import settings
from redis.commands.core import Script

from exchange.redis_clients import redis_client

# Seconds a pending key lives without its task renewing it.
PENDING_TTL = 10

# KEYS: the pending key, the queue's list; ARGV: the key's time to live, the message.
_PUSH_ONCE = """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
  redis.call('LPUSH', KEYS[2], ARGV[2])
  return 1
end
return 0
"""

# Markers standing for the ids in a template's text (never in a message of Celery's: they
# are not uuids).
_TASK_ID = "@task-id@"
_DELIVERY_TAG = "@delivery-tag@"


@dataclass(frozen=True)
class Template:
    """One of Celery's messages for a task, its arguments and queue, with its ids marked."""

    queue_key: str  # the Redis list the message goes to
    text: str

    def message(self) -> str:
        """The message with new ids, as Celery would have written it."""
        return self.text.replace(_TASK_ID, str(uuid.uuid4())).replace(
            _DELIVERY_TAG, str(uuid.uuid4())
        )


_templates: dict[tuple[str | int, tuple[object, ...], str], Template | None] = {}
_templates_lock = threading.Lock()


def request_once(key: str, task: Task | str, *args: object, queue: str | None = None) -> bool:
    """Queue ``task`` (a task, or a task's registered name) with ``args``, on ``queue`` if
    given (else the task's own), unless ``key`` says one is pending already; True if this
    call queued it."""
    template = _template_for(task, args, queue) if queue is not None else None
    if template is not None:
        sent = _push_once()(keys=[key, template.queue_key], args=[PENDING_TTL, template.message()])
        return bool(sent)
    if not redis_client().set(key, "1", nx=True, ex=PENDING_TTL):
        return False
    _celery_send(task, args, queue)
    return True


def _celery_send(task: Task | str, args: tuple[object, ...], queue: str | None) -> None:
    if isinstance(task, str):
        current_app.send_task(task, args=list(args), queue=queue)
    else:
        task.apply_async(args=list(args), queue=queue)


@functools.cache
def _push_once() -> Script:
    return redis_client().register_script(_PUSH_ONCE)


def _template_for(task: Task | str, args: tuple[object, ...], queue: str) -> Template | None:
    """The kept template for this message, made on first use; None where Celery must send
    it (see the module's docstring)."""
    if get_current_worker_task() is not None:
        return None
    # ``type(...) is str``, not ``isinstance``, and the task by identity, not by name: a
    # task from ``shared_task`` is a proxy whose class and name are looked up on every use
    # (py-spy: a quarter of ``request_once``'s time). Tasks are made once, at import.
    slot = (task if type(task) is str else id(task), args, queue)
    try:
        return _templates[slot]
    except KeyError:
        pass
    with _templates_lock:
        if slot in _templates:
            return _templates[slot]
        # Celery's configuration is read once per template: each read of it took longer than
        # the whole script's call (cProfile).
        if not templates_apply():
            _templates[slot] = None
            return None
        raw = raw_capture(task, args, queue)
        # A message of another shape is Celery's to send from now on; none read back (it was
        # not sent where it was asked to go) leaves the next call to try again.
        template = template_of(raw, queue) if raw is not None else None
        if raw is not None:
            _templates[slot] = template
        return template


def templates_apply() -> bool:
    """Whether this process's Celery sends its messages to ``REDIS_URL`` as plain Redis lists
    (the broker is that Redis, tasks are not run eagerly, no key prefix or priorities)."""
    conf = current_app.conf
    options = conf.broker_transport_options or {}
    return (
        not conf.task_always_eager
        and str(conf.broker_url) == str(settings.REDIS_URL)
        and str(conf.broker_url).startswith(("redis://", "rediss://"))
        and not options.get("global_keyprefix")
        and not conf.task_queue_max_priority
        and not conf.task_default_priority
    )


def raw_capture(task: Task | str, args: tuple[object, ...], queue: str) -> str | None:
    """Have Celery publish ``task`` with ``args`` to a queue of this call's own and read the
    message back (None if not exactly one came)."""
    scratch = scratch_queue(queue)
    client = redis_client()
    try:
        _celery_send(task, args, scratch)
        raw = cast(list[str], client.lrange(scratch, 0, -1))
    finally:
        client.delete(scratch, f"_kombu.binding.{scratch}", f"_kombu.binding_permanent.{scratch}")
    return raw[0] if len(raw) == 1 else None


def scratch_queue(queue: str) -> str:
    return f"{queue}.template.{uuid.uuid4().hex}"


def template_of(raw: str, queue: str) -> Template | None:
    """``raw``, a message Celery sent to a scratch queue of ``queue``, as the template of the
    same message to ``queue``; None unless its ids and queue are where a template expects
    them."""
    if _TASK_ID in raw or _DELIVERY_TAG in raw:
        return None  # (arguments that spell a marker would be renewed with the ids)
    message = json.loads(raw)
    headers, properties = message.get("headers", {}), message.get("properties", {})
    task_id, tag = headers.get("id"), properties.get("delivery_tag")
    expected = (
        isinstance(task_id, str)
        and isinstance(tag, str)
        and headers.get("root_id") == task_id
        and headers.get("parent_id") is None
        and properties.get("correlation_id") == task_id
        and properties.get("priority", 0) == 0
        and properties.get("delivery_info", {}).get("exchange") == ""
        and _is_scratch(properties["delivery_info"].get("routing_key"), queue)
    )
    if not expected:
        return None
    headers.update(id=_TASK_ID, root_id=_TASK_ID)
    properties.update(correlation_id=_TASK_ID, delivery_tag=_DELIVERY_TAG)
    properties["delivery_info"]["routing_key"] = queue
    return Template(queue_key=queue, text=json.dumps(message))


def _is_scratch(name: object, queue: str) -> bool:
    prefix = f"{queue}.template."
    return isinstance(name, str) and name.startswith(prefix) and len(name) == len(prefix) + 32


def pending_renew(key: str) -> None:
    """Keep ``key`` for another ``PENDING_TTL`` (a task still working); without Redis the key
    expires by itself."""
    with contextlib.suppress(Exception):
        redis_client().set(key, "1", ex=PENDING_TTL)


def pending_clear(key: str) -> None:
    """Let the next request queue a task again; without Redis the key expires by itself."""
    with contextlib.suppress(Exception):
        redis_client().delete(key)
