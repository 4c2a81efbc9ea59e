"""The exchange's status for ``/healthz``, cheap enough to ask often: the database, Redis,
the workers' heartbeats (no broadcast ping) and a channel-layer round trip, each a few
milliseconds. The database and channel-layer checks are ``selectors.health``'s."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from django.conf import settings

from exchange.celery import matching_partition_heartbeat_key, matching_partitions
from exchange.redis_clients import redis_client
from exchange.selectors import health
from exchange.selectors.subscription_engine import subscription_engine_status


def _check_redis() -> dict[str, Any]:
    return {"ok": bool(redis_client().ping())}


def _recent_beats(key: str) -> dict[str, Any]:
    """The workers whose heartbeat under ``key`` is recent; stale beats are dropped on the way."""
    client = redis_client()
    since = time.time() - settings.WORKER_HEARTBEAT_STALE_SECONDS
    client.zremrangebyscore(key, "-inf", f"({since}")
    # redis-py types its commands for both clients; the synchronous one returns the list.
    workers = sorted(cast(list[str], client.zrangebyscore(key, since, "+inf")))
    return {"ok": bool(workers), "workers": workers}


def _check_workers() -> dict[str, Any]:
    """Workers that take the default queue (sweeps, closing)."""
    return _recent_beats(settings.WORKER_HEARTBEAT_KEY)


def _check_matching_worker() -> dict[str, Any]:
    """Workers that take the matching queues: up while every one of the
    ``MATCHING_PARTITIONS`` has a live worker (a partition without one has its markets'
    cycles never run); the partitions without one are named."""
    beats = _recent_beats(settings.MATCHING_HEARTBEAT_KEY)
    uncovered = [
        partition
        for partition in matching_partitions()
        if not _recent_beats(matching_partition_heartbeat_key(partition))["ok"]
    ]
    return {"ok": not uncovered, "workers": beats["workers"], "uncovered_partitions": uncovered}


def _check_subscription_engine() -> dict[str, Any]:
    """The subscription engine's processes (issue 35): up while one beat recently (in
    Redis, as the workers do); with each live one's partitions and lag, and the
    partitions nobody holds."""
    beats = _recent_beats(settings.SUBSCRIPTION_ENGINE_HEARTBEAT_KEY)
    return {"ok": beats["ok"], "beating": beats["workers"], **subscription_engine_status()}


CHECKS: dict[str, Callable[[], dict[str, Any]]] = {
    "database": health.CHECKS["database"],
    "redis": _check_redis,
    "celery_worker": _check_workers,
    "matching_worker": _check_matching_worker,
    "channel_layer": health.CHECKS["channel_layer"],
    "subscription_engine": _check_subscription_engine,  # the live subscriptions (issue 35)
}


def status_report() -> dict[str, Any]:
    """Each component's status; ``ok`` is true only when all of them are up. A failing
    dependency is reported as down (its error text cut short), never raised."""
    components: dict[str, Any] = {}
    for name, check in CHECKS.items():
        try:
            components[name] = check()
        except Exception as exc:  # any failure of a dependency is a "down"
            components[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"ok": all(c["ok"] for c in components.values()), "components": components}
