"""The ports and URLs of the project-local services, read from ``ops/lib/ports.env``.

That file is the one place they are written: ``ops/lib/env.sh`` sources it for the shell
scripts, and this module reads it (python-dotenv, which expands ``${NAME}`` as the shell
does) for the settings' defaults of ``DATABASE_URL`` and ``REDIS_URL`` and for the
benchmarks.
"""

from __future__ import annotations

from pathlib import Path

from dotenv import dotenv_values

PORTS_FILE = Path(__file__).resolve().parents[2] / "ops" / "lib" / "ports.env"


def _required(values: dict[str, str | None], name: str) -> str:
    value = values.get(name)
    if not value:
        raise RuntimeError(f"{PORTS_FILE} does not set {name}")
    return value


_values = dotenv_values(PORTS_FILE)
DEV_DATABASE_URL = _required(_values, "DEV_DATABASE_URL")
DEV_REDIS_URL = _required(_values, "DEV_REDIS_URL")
TEST_DATABASE_URL = _required(_values, "TEST_DATABASE_URL")
TEST_REDIS_URL = _required(_values, "TEST_REDIS_URL")
DEV_HISTORY_DATABASE_URL = _required(_values, "DEV_HISTORY_DATABASE_URL")
TEST_HISTORY_DATABASE_URL = _required(_values, "TEST_HISTORY_DATABASE_URL")
