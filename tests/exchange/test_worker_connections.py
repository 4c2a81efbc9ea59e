"""A worker's database connections between tasks (``CELERY_DB_REUSE_MAX`` and
``exchange.celery.connection_give_back``): the pool stays, the connection goes back to it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from celery.fixups.django import DjangoWorkerFixup
from celery.signals import task_postrun
from django.conf import settings
from django.db import connections

from exchange import celery as celery_app


class _Task:
    """What the signals are sent with: a task whose request says how it runs."""

    def __init__(self, *, eager: bool) -> None:
        self.request = SimpleNamespace(is_eager=eager)


def _task(*, eager: bool) -> _Task:
    return _Task(eager=eager)


@pytest.fixture
def pooled(monkeypatch):
    """The settings of a pooled database (the tests' own has no pool), and a record of every
    pool the worker fixup closes."""
    default = connections["default"]  # created, so the fixup's closing reaches it
    # A connection an earlier test left open was made without a pool: closed under the
    # pooled settings, Django would give it back to a pool it never came from.
    default.close()
    monkeypatch.setitem(settings.DATABASES["default"]["OPTIONS"], "pool", {"min_size": 1})
    closed: list[str] = []
    monkeypatch.setattr(default, "close_pool", lambda: closed.append(default.alias))
    return closed


def test_a_prefork_worker_keeps_its_pool_for_reuse_max_tasks(pooled):
    fixup = DjangoWorkerFixup(celery_app.app)
    fixup.worker = SimpleNamespace(pool_cls="prefork")  # what the fixup checks
    task = _task(eager=False)
    reuse = settings.CELERY_DB_REUSE_MAX
    assert fixup.db_reuse_max == reuse == 1000
    for _ in range(reuse):
        fixup.on_task_prerun(sender=task)
        fixup.on_task_postrun(sender=task)
    assert pooled == []
    fixup.on_task_prerun(sender=task)  # the next task starts on a new pool
    assert pooled == ["default"]


def test_without_reuse_max_the_fixup_closes_the_pool_around_every_task(pooled):
    fixup = DjangoWorkerFixup(celery_app.app)
    fixup.worker = SimpleNamespace(pool_cls="prefork")
    fixup.db_reuse_max = None  # Celery's default: what every task paid before
    fixup.on_task_prerun(sender=_task(eager=False))
    fixup.on_task_postrun(sender=_task(eager=False))
    assert pooled == ["default", "default"]


def test_the_connection_goes_back_after_a_worker_task_but_not_after_an_eager_one(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(celery_app, "close_old_connections", lambda: calls.append("given back"))
    task_postrun.send(sender=_task(eager=True))
    assert calls == []  # an eager task runs in its caller's transaction
    task_postrun.send(sender=_task(eager=False))
    assert calls == ["given back"]
