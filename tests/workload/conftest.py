"""Fixtures for the workload tests: the run's one SparkSession, the test database.

The Spark fixture is the one of ``tests/spark`` (the process's shared session, so a run
that has both directories starts Spark once).
"""

from __future__ import annotations

from typing import Any

import pytest

from exchange.management.commands.match_files import database_conninfo
from tests.spark.conftest import spark  # noqa: F401  (re-exported fixture)


@pytest.fixture(scope="session")
def workload_conninfo(django_db_setup: Any, django_db_blocker: Any) -> str:
    """The test database (created by pytest-django) as a libpq conninfo string."""
    with django_db_blocker.unblock():
        return database_conninfo()
