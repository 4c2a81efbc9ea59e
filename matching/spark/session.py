"""One SparkSession per process, on ``SPARK_MASTER`` (default ``local[2]``).

Spark takes seconds to start and its configuration is fixed when the first session is
created, so every caller (the batch matcher, the nightly analytics, the tests) shares the
session made by the first call to ``spark_session``. It is configured for what both jobs
need:

* the PostgreSQL JDBC driver from the Debian package (``libpostgresql-jdbc-java``) on
  ``spark.jars`` when it is installed; nothing is ever downloaded at run time (no
  ``spark.jars.packages``);
* UTC as the session time zone, so timestamps read over JDBC and day boundaries mean the
  same as in the exchange;
* no web UI and no console progress bars; WARN logging, configured by ``log4j2.properties``
  next to this module so that a command's stderr holds only what matters;
* in local mode, few shuffle partitions (the default 200 is for clusters) and the driver
  bound to 127.0.0.1.

On a cluster master (``spark://...``, ``yarn``, ...) the ``matching`` package is shipped to
the executors as a zip, since they decode constraints with it.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
JDBC_DRIVER_JAR = "/usr/share/java/postgresql.jar"
LOCAL_SHUFFLE_PARTITIONS = 4
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")

_lock = threading.Lock()
_session: SparkSession | None = None


def default_master() -> str:
    return os.environ.get("SPARK_MASTER") or DEFAULT_MASTER


def spark_session(master: str | None = None, *, app_name: str = "intersect") -> SparkSession:
    """The process's SparkSession, created on first use on ``master`` (or ``SPARK_MASTER``).

    A later call with another master gets the existing session: one process, one session.
    """
    global _session
    with _lock:
        if _session is not None and _session.sparkContext._jsc is not None:
            return _session
        _session = _create(master or default_master(), app_name)
        return _session


def stop_spark_session() -> None:
    """Stop the process's session (the next ``spark_session`` call starts a new one)."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None


def _create(master: str, app_name: str) -> SparkSession:
    # py4j logs every command at INFO; the project's root logger would print them all.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Executors run the interpreter that runs us (the project's virtualenv).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    # pyspark once a session is wanted: importing this module must not load it.
    from pyspark.sql import SparkSession

    local = master.startswith("local")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if os.path.exists(JDBC_DRIVER_JAR):
        builder = builder.config("spark.jars", JDBC_DRIVER_JAR)
    if LOG_CONFIG.exists():
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
        )
    if local:
        builder = (
            builder.config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
            .config("spark.default.parallelism", str(LOCAL_SHUFFLE_PARTITIONS))
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    if not local:
        session.sparkContext.addPyFile(str(_package_zip()))
    return session


def _package_zip() -> Path:
    """The ``matching`` package as a zip for the executors of a cluster."""
    root = Path(__file__).resolve().parents[1]
    target = Path(tempfile.mkdtemp(prefix="intersect-spark-")) / "matching.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*.py")):
            archive.write(path, path.relative_to(root.parent))
    return target
