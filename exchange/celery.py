"""The Celery application: the worker runs the continuous matching transaction, beat the sweeps.

Every worker also keeps a heartbeat in Redis (``WorkerHeartbeat``), which ``/healthz`` reads
instead of pinging the workers: one Redis read instead of a second-long broadcast.
"""

import contextlib
import os
import socket
import time

from celery import Celery, bootsteps
from django.conf import settings

from exchange.redis_clients import redis_client

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "exchange.settings.development")

app = Celery("exchange")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class WorkerHeartbeat(bootsteps.StartStopStep):
    """Record ``hostname -> time`` in the sorted set ``WORKER_HEARTBEAT_KEY`` every
    ``WORKER_HEARTBEAT_SECONDS`` from the worker's own timer, and remove it on a clean stop.
    A worker that dies stops beating; readers count only recent beats."""

    requires = {"celery.worker.components:Timer"}

    def __init__(self, worker, **kwargs):
        super().__init__(worker, **kwargs)
        self.tref = None

    def beat(self, worker) -> None:
        with contextlib.suppress(Exception):  # Redis away: the next beat tries again
            name = worker.hostname or socket.gethostname()
            redis_client().zadd(settings.WORKER_HEARTBEAT_KEY, {name: time.time()})

    def start(self, worker) -> None:
        self.beat(worker)
        self.tref = worker.timer.call_repeatedly(
            settings.WORKER_HEARTBEAT_SECONDS, self.beat, (worker,), priority=10
        )

    def stop(self, worker) -> None:
        if self.tref is not None:
            self.tref.cancel()
        with contextlib.suppress(Exception):  # Redis away: the beat goes stale on its own
            redis_client().zrem(settings.WORKER_HEARTBEAT_KEY, worker.hostname)


app.steps["worker"].add(WorkerHeartbeat)
