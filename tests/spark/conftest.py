"""One local SparkSession for the whole run: Spark takes seconds to start.

The session is the process's shared one (``matching.spark.spark_session``), so the code
under test (``match_files --strategy spark``, the analytics command) finds it already
running. ``local[2]`` and few shuffle partitions: the machine is small and shared.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from matching.spark import spark_session, stop_spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", app_name="intersect-tests")
    yield session
    stop_spark_session()
