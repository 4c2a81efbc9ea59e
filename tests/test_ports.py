"""``ops/lib/ports.env`` is the one home of the services' ports and URLs: the shell scripts
(``ops/lib/env.sh``) and the settings (``exchange.settings.ports``) read the same values."""

from __future__ import annotations

import subprocess

import pytest

from exchange.settings import ports
from tests.livestack import ROOT


@pytest.mark.parametrize(
    ("profile", "database_url", "redis_url"),
    [
        ("dev", ports.DEV_DATABASE_URL, ports.DEV_REDIS_URL),
        ("test", ports.TEST_DATABASE_URL, ports.TEST_REDIS_URL),
    ],
)
def test_shell_and_settings_agree(profile: str, database_url: str, redis_url: str) -> None:
    shell = subprocess.run(
        [
            "bash",
            "-c",
            'source ops/lib/env.sh && echo "$LOCAL_DATABASE_URL $LOCAL_REDIS_URL $PG_PORT"',
        ],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "INTERSECT_PROFILE": profile},
        capture_output=True,
        text=True,
        check=True,
    )
    db, redis, pg_port = shell.stdout.split()
    assert (db, redis) == (database_url, redis_url)
    assert database_url.startswith(f"postgres://intersect:intersect@127.0.0.1:{pg_port}/")


def test_the_urls_are_the_ones_ops_services_runs() -> None:
    assert ports.DEV_DATABASE_URL == "postgres://intersect:intersect@127.0.0.1:55432/intersect"
    assert ports.DEV_REDIS_URL == "redis://127.0.0.1:56379/0"
    assert ports.TEST_DATABASE_URL == "postgres://intersect:intersect@127.0.0.1:55433/intersect"
    assert ports.TEST_REDIS_URL == "redis://127.0.0.1:56380/0"
