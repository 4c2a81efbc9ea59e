"""The Celery application: the worker runs the continuous matching transaction, beat the sweeps.

A worker takes a role (``celery -A exchange worker --role ...``):

* ``matching``: the matching partitions' queues only (``MATCHING_QUEUE``.0 to
  ``MATCHING_PARTITIONS`` - 1; ``--partitions 0,2`` takes those, by default all). Run it
  with one process: its task runs a partition's cycles back to back while changes are
  pending. More markets in parallel take more workers, each on its own partitions, on any
  host (``exchange/tasks.py``; a market's cycles never overlap, whoever runs them);
* ``tasks``: every other task (the sweeps, closing, the analytics), on the default queue;
* ``all`` (the default): both queues, for a single development worker.

Every worker also keeps a heartbeat in Redis (``WorkerHeartbeat``), which ``/healthz`` reads
instead of pinging the workers: one Redis read instead of a second-long broadcast. A
matching worker beats for each of its partitions too, so that ``/healthz`` can tell a
partition nobody consumes (its markets would never be matched).
"""

import contextlib
import os
import socket
import time

from celery import Celery, bootsteps
from celery.signals import task_postrun, worker_process_init
from click import Choice, Option
from django.conf import settings
from django.db import close_old_connections

from exchange.collector import collector_settle
from exchange.redis_clients import redis_client

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exchange.settings.development")

app = Celery("exchange")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

ROLES = ("all", "matching", "tasks")

app.user_options["worker"].add(
    Option(
        ["--role"],
        type=Choice(ROLES),
        default="all",
        help="which queues this worker consumes: the matching queues, the others, or all",
    )
)
app.user_options["worker"].add(
    Option(
        ["--partitions"],
        default="",
        help="the matching partitions this worker consumes, e.g. 0,2 (default: all of "
        "MATCHING_PARTITIONS)",
    )
)


def matching_partitions(given: str = "") -> list[int]:
    """The partitions named in ``given`` (``"0,2"``), or all of ``MATCHING_PARTITIONS``;
    ``ValueError`` for one that does not exist."""
    count = max(1, int(settings.MATCHING_PARTITIONS))
    if not given.strip():
        return list(range(count))
    chosen = sorted({int(part) for part in given.split(",") if part.strip()})
    if not chosen or chosen[0] < 0 or chosen[-1] >= count:
        raise ValueError(
            f"--partitions {given!r}: MATCHING_PARTITIONS is {count} (0 to {count - 1})"
        )
    return chosen


def role_queues(role: str, partitions: str = "") -> list[str]:
    """The queues a worker of ``role`` consumes (of the matching ones, ``partitions``)."""
    matching = [f"{settings.MATCHING_QUEUE}.{p}" for p in matching_partitions(partitions)]
    queues = {"matching": matching, "tasks": [app.conf.task_default_queue]}
    return queues.get(role, [app.conf.task_default_queue, *matching])


class WorkerRole(bootsteps.Step):
    """Select the queues of the worker's ``--role`` (and ``--partitions``) before its
    consumer starts."""

    def __init__(self, worker, role: str = "all", partitions: str = "", **kwargs):
        super().__init__(worker, **kwargs)
        worker.app.amqp.queues.select(role_queues(role, partitions or ""))


def matching_partition_heartbeat_key(partition: int) -> str:
    """Where the workers consuming matching ``partition``'s queue beat (``/healthz`` asks
    that every partition has a live one)."""
    return f"{settings.MATCHING_HEARTBEAT_KEY}.{partition}"


def heartbeat_keys(queues: list[str]) -> list[str]:
    """Where a worker consuming ``queues`` beats: the workers' key if it takes the default
    queue, the matching workers' key if it takes a matching partition's queue, and that
    partition's own key for each such queue."""
    keys = []
    if app.conf.task_default_queue in queues:
        keys.append(settings.WORKER_HEARTBEAT_KEY)
    prefix = f"{settings.MATCHING_QUEUE}."
    partitions = sorted(int(q[len(prefix) :]) for q in queues if q.startswith(prefix))
    if partitions:
        keys.append(settings.MATCHING_HEARTBEAT_KEY)
        keys.extend(matching_partition_heartbeat_key(p) for p in partitions)
    return keys


class WorkerHeartbeat(bootsteps.StartStopStep):
    """Record ``hostname -> time`` in the sorted sets of ``heartbeat_keys`` every
    ``WORKER_HEARTBEAT_SECONDS`` from the worker's own timer, and remove it on a clean stop.
    A worker that dies stops beating; readers count only recent beats. The timer runs in
    the worker's main process, so a long run of cycles in its pool process does not stop it."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs):
        super().__init__(worker, **kwargs)
        self.tref = None
        self.keys: list[str] = []

    def beat(self, worker) -> None:
        with contextlib.suppress(Exception):  # Redis away: the next beat tries again
            name = worker.hostname or socket.gethostname()
            client = redis_client()
            for key in self.keys:
                client.zadd(key, {name: time.time()})

    def start(self, worker) -> None:
        self.keys = heartbeat_keys(list(worker.app.amqp.queues.consume_from))
        self.beat(worker)
        self.tref = worker.timer.call_repeatedly(
            settings.WORKER_HEARTBEAT_SECONDS, self.beat, (worker,), priority=10
        )

    def stop(self, worker) -> None:
        if self.tref is not None:
            self.tref.cancel()
        with contextlib.suppress(Exception):  # Redis away: the beat goes stale on its own
            for key in self.keys:
                redis_client().zrem(key, worker.hostname)


app.steps["worker"].add(WorkerRole)
app.steps["worker"].add(WorkerHeartbeat)


@worker_process_init.connect
def pool_process_settle(**_kwargs: object) -> None:
    """A pool process has imported the project and set Django up before it takes a task:
    what it holds now lives as long as it does (``exchange/collector.py``)."""
    collector_settle()


@task_postrun.connect
def connection_give_back(sender: object = None, **_kwargs: object) -> None:
    """After a task in a worker, its database connection goes back to the pool, or is
    dropped if it broke (``close_old_connections``), as Django does after a request; the
    pool itself stays (``CELERY_DB_REUSE_MAX``). Not after a task run eagerly, in the
    caller's own process and transaction."""
    request = getattr(sender, "request", None)
    if getattr(request, "is_eager", False):
        return
    close_old_connections()
