from __future__ import annotations

from pathlib import Path

import pytest

from tests.livestack import ROOT, LiveStack

ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def _flushed_redis():
    """The test Redis belongs to this run: start from an empty broker and channel layer."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.flushdb()
    client.close()


@pytest.fixture(scope="session")
def live_stack(django_db_setup, django_db_blocker, _flushed_redis) -> LiveStack:
    """uvicorn and a Celery worker, started as ops/run starts them, on the test database."""
    from django.db import connection

    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    stack = LiveStack(database_name=name, log_dir=Path(ARTIFACTS / "logs"))
    try:
        stack.start_server()
        stack.start_worker()
        yield stack
    finally:
        stack.stop()
