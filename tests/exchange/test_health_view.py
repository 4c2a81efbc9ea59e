"""/healthz reads the workers' heartbeats (no broadcast ping), tells a dead worker from a live
one, and shows its details to staff only."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
from django.conf import settings

from exchange import socket_beats
from exchange.celery import WorkerHeartbeat, heartbeat_keys, role_queues
from exchange.redis_clients import redis_client
from exchange.selectors import health, status
from tests.factories import StaffFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def heartbeats(settings):
    """Heartbeat keys of this test's own, so that no live worker beats into them; a
    subscription engine beats (its own component is tested in tests/subscriptions)."""
    own = time.monotonic_ns()
    settings.WORKER_HEARTBEAT_KEY = f"{settings.WORKER_HEARTBEAT_KEY}:{own}"
    settings.MATCHING_HEARTBEAT_KEY = f"{settings.MATCHING_HEARTBEAT_KEY}:{own}"
    settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY = (
        f"{settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY}:{own}"
    )
    redis_client().zadd(settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY, {"engine@host": time.time()})
    yield settings.WORKER_HEARTBEAT_KEY
    redis_client().delete(
        settings.WORKER_HEARTBEAT_KEY,
        settings.MATCHING_HEARTBEAT_KEY,
        *(f"{settings.MATCHING_HEARTBEAT_KEY}.{p}" for p in range(settings.MATCHING_PARTITIONS)),
        settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY,
    )


def beat(name: str, role: str = "all", partitions: str = "") -> None:
    """One heartbeat of a worker ``name`` of ``role`` (on ``partitions``, by default all), as
    its timer sends it."""
    step = SimpleNamespace(keys=heartbeat_keys(role_queues(role, partitions)))
    WorkerHeartbeat.beat(step, SimpleNamespace(hostname=name))


def test_without_a_recent_heartbeat_the_worker_is_down(client, heartbeats):
    client.force_login(StaffFactory())
    stale = time.time() - settings.WORKER_HEARTBEAT_STALE_SECONDS - 1
    redis_client().zadd(heartbeats, {"dead@host": stale})
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["ok"] is False
    assert body["components"]["celery_worker"] == {"ok": False, "workers": []}
    assert body["components"]["matching_worker"] == {
        "ok": False,
        "workers": [],
        "uncovered_partitions": [0, 1],
    }
    assert body["components"]["database"]["ok"] is True
    assert body["components"]["redis"] == {"ok": True}
    assert body["components"]["channel_layer"] == {"ok": True}
    # The stale beat is dropped on the way.
    assert redis_client().zcard(heartbeats) == 0


def test_a_recent_heartbeat_makes_the_worker_up(client, heartbeats):
    client.force_login(StaffFactory())
    beat("w1@host")
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["components"]["celery_worker"] == {"ok": True, "workers": ["w1@host"]}
    assert response.json()["components"]["matching_worker"] == {
        "ok": True,
        "workers": ["w1@host"],
        "uncovered_partitions": [],
    }


def test_without_a_matching_worker_the_stack_is_down(client, heartbeats):
    """A worker that takes only the other queues runs no cycle: /healthz says so."""
    client.force_login(StaffFactory())
    beat("tasks@host", "tasks")
    response = client.get("/healthz")
    assert response.status_code == 503
    components = response.json()["components"]
    assert components["celery_worker"] == {"ok": True, "workers": ["tasks@host"]}
    assert components["matching_worker"] == {
        "ok": False,
        "workers": [],
        "uncovered_partitions": [0, 1],
    }
    beat("matching@host", "matching")
    response = client.get("/healthz")
    assert response.status_code == 200
    components = response.json()["components"]
    assert components["celery_worker"] == {"ok": True, "workers": ["tasks@host"]}
    assert components["matching_worker"] == {
        "ok": True,
        "workers": ["matching@host"],
        "uncovered_partitions": [],
    }


def test_every_matching_partition_needs_a_live_worker(client, heartbeats):
    """Workers take partitions (``--partitions``): one live worker is not enough while a
    partition has none, whose markets would never be matched; /healthz names it."""
    assert settings.MATCHING_PARTITIONS == 2
    client.force_login(StaffFactory())
    beat("tasks@host", "tasks")
    beat("m0@host", "matching", "0")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["components"]["matching_worker"] == {
        "ok": False,
        "workers": ["m0@host"],
        "uncovered_partitions": [1],
    }
    # The worker of partition 1 died: its stale beat does not cover it.
    stale = time.time() - settings.WORKER_HEARTBEAT_STALE_SECONDS - 1
    redis_client().zadd(f"{settings.MATCHING_HEARTBEAT_KEY}.1", {"m1@host": stale})
    redis_client().zadd(settings.MATCHING_HEARTBEAT_KEY, {"m1@host": stale})
    assert client.get("/healthz").status_code == 503
    beat("m1@host", "matching", "1")
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["components"]["matching_worker"] == {
        "ok": True,
        "workers": ["m0@host", "m1@host"],
        "uncovered_partitions": [],
    }


@pytest.mark.parametrize("who", ["anonymous", "user"])
def test_non_staff_get_only_the_bare_status(client, heartbeats, who):
    if who == "user":
        client.force_login(UserFactory())
    assert client.get("/healthz").json() == {"ok": False}
    beat("w1@host")
    response = client.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"ok": True})


def test_without_a_subscription_engine_the_stack_is_down(client, heartbeats, settings):
    """The engine is how live subscriptions advance (issue 35): /healthz needs one beating."""
    client.force_login(StaffFactory())
    beat("w1@host")
    redis_client().delete(settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["components"]["subscription_engine"]["ok"] is False
    redis_client().zadd(settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY, {"engine@host": time.time()})
    assert client.get("/healthz").status_code == 200


def test_the_web_tier_is_down_while_none_of_its_socket_processes_is_alive(
    client, heartbeats, monkeypatch
):
    # Given an HTTP process of a tier with one socket process (a real process, its slot
    # written as the supervisor and the process write it) and every other component up
    staff = StaffFactory()
    beat("w1@host")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    beats = socket_beats.SocketBeats.create(1, grace=30)
    monkeypatch.setattr(socket_beats, "attached", beats)
    try:
        beats.started(0, process.pid)
        beats.beat(0)
        client.force_login(staff)
        response = client.get("/healthz")
        assert response.status_code == 200
        assert response.json()["components"]["socket_workers"] == {
            "ok": True,
            "alive": ["socket0"],
            "down": [],
            "upgrades": "handed_over",
        }

        # When the socket process is killed
        process.kill()
        process.wait()

        # Then the tier is down, naming it (new WebSockets still go to the pair: the
        # supervisor starts it again and the new one takes them)
        response = client.get("/healthz")
        assert response.status_code == 503
        assert response.json()["components"]["socket_workers"] == {
            "ok": False,
            "alive": [],
            "down": ["socket0"],
            "upgrades": "handed_over",
        }
        client.logout()
        response = client.get("/healthz")
        assert (response.status_code, response.json()) == (503, {"ok": False})
    finally:
        process.kill()
        process.wait()
        os.close(beats.fd)


def test_without_socket_processes_there_is_no_socket_component(client, heartbeats):
    # ``runserver``, the test client, or a tier with SOCKET_WORKERS=0: the HTTP processes
    # carry the sockets themselves
    assert socket_beats.attached is None
    client.force_login(StaffFactory())
    beat("w1@host")
    response = client.get("/healthz")
    assert response.status_code == 200
    assert "socket_workers" not in response.json()["components"]


def test_a_channel_layer_that_never_answers_is_down_after_the_round_trips_limit(
    db, monkeypatch, heartbeats
):
    class Silent:  # takes the message, never gives it back
        async def new_channel(self) -> str:
            return "health.silent"

        async def send(self, channel: str, message: dict) -> None:
            return None

        async def receive(self, channel: str) -> dict:
            await asyncio.Event().wait()
            raise AssertionError("never reached")

    monkeypatch.setattr(health, "get_channel_layer", Silent)
    monkeypatch.setattr(health, "ROUND_TRIP_SECONDS", 0.2)
    with pytest.raises(TimeoutError):
        health.CHECKS["channel_layer"]()
    report = status.status_report()
    assert report["ok"] is False
    assert report["components"]["channel_layer"] == {"ok": False, "error": "TimeoutError: "}
