"""Celery tasks: thin wrappers that load fresh rows and call a service."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="exchange.ping")
def ping(token: str) -> str:
    """Round-trip check used by /healthz and the smoke tests: echoes its argument."""
    return f"pong:{token}"
