from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.livestack import ROOT, LiveStack

ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def live_stack(django_db_setup, django_db_blocker) -> LiveStack:
    """uvicorn and a Celery worker, started as ops/run starts them, on the test database."""
    from django.db import connection

    with django_db_blocker.unblock():
        name = connection.settings_dict["NAME"]
    run = os.environ.get("INTERSECT_TEST_RUN", str(os.getpid()))
    stack = LiveStack(database_name=name, log_dir=Path(ARTIFACTS / "logs" / f"run-{run}"))
    try:
        stack.start_server()
        stack.start_worker()
        yield stack
    finally:
        stack.stop()
