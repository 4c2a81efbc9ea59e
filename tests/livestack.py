"""The live stack of the stack and browser tests: ``ops/stack.py``'s processes (uvicorn, a
Celery worker, beat) run against the test database that pytest-django created, so tests
that use them must commit their rows (``transactional_db``).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings

from ops.stack import ROOT, Process, Stack, free_port

__all__ = ["ROOT", "LiveStack", "Process", "api_tokens", "free_port", "process_env"]


def process_env(database_name: str) -> dict[str, str]:
    """The environment of a child process: the test settings, pointed at the test database."""
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "exchange.settings.test"
    env["DATABASE_URL"] = (
        f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{database_name}"
    )
    env["REDIS_URL"] = str(settings.REDIS_URL)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class LiveStack(Stack):
    """A stack on the test database ``database_name``, its logs under ``log_dir``."""

    def __init__(self, database_name: str, log_dir: Path) -> None:
        super().__init__(env=process_env(database_name), log_dir=log_dir)
        self.database_name = database_name

    def worker_name(self, role: str = "tasks") -> str:
        return f"test-{role}-{os.getpid()}@{socket.gethostname()}"

    def start_worker(
        self, *, role: str = "tasks", concurrency: int = 2, partitions: str = "", name: str = ""
    ) -> Process:
        """A worker of ``role``, once it answers a ping (the task queues are this run's own)."""
        process = super().start_worker(
            role=role, concurrency=concurrency, partitions=partitions, name=name
        )
        from exchange.celery import app  # configured by the test settings pytest loaded

        node = self.worker_name(role if process.name == "worker" else process.name)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if app.control.ping(destination=[node], timeout=0.5):
                    return process
            except Exception:  # noqa: BLE001 - a broker connection Redis closed (a restart
                pass  # in an earlier test) is dropped by the failed call: ask again
            self.check_alive(process.name)
        raise RuntimeError(f"the Celery {role} worker did not answer:\n" + process.tail())


def api_tokens(api: Any, names: Iterable[str]) -> dict[str, str]:
    """An API token per user name, from the live stack's ``/auth/token/`` (``api`` is an
    httpx client on ``/api/v1``); the users were made with the factories' test password."""
    return {
        name: api.post(
            "/auth/token/", json={"username": name, "password": "pw-for-tests-1"}
        ).json()["token"]
        for name in names
    }


def api_created(api: Any, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """``POST path`` as the user of ``token``; the answer must be 201, its JSON is returned."""
    response = api.post(path, json=body, headers={"Authorization": f"Token {token}"})
    assert response.status_code == 201, response.text
    return response.json()


def event_log(api: Any, token: str) -> list[dict[str, Any]]:
    """The whole event log as the user of ``token`` may read it (``/events/`` as JSON lines)."""
    response = api.get(
        "/events/", params={"format": "jsonl"}, headers={"Authorization": f"Token {token}"}
    )
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line]


def staff_browser(url: str, username: str, timeout: float = 30) -> httpx.Client:
    """An ``httpx.Client`` on ``url`` logged in through the admin as a new staff user
    (``/healthz`` shows its components to staff only)."""
    # Django's: the factories need the app registry, set up after this module is imported
    from tests.factories import StaffFactory

    staff = StaffFactory(username=username)
    browser = httpx.Client(base_url=url, timeout=timeout)
    browser.get("/admin/login/")
    browser.post(
        "/admin/login/",
        data={
            "username": staff.username,
            "password": "pw-for-tests-1",
            "csrfmiddlewaretoken": browser.cookies["csrftoken"],
        },
        headers={"Referer": url + "/admin/login/"},
    )
    return browser
