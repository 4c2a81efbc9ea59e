"""Production settings: pass check --deploy with the required variables, refuse without a key."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.livestack import ROOT


def run_manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    base.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_check_deploy():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SETTINGS_MODULE="exchange.settings.production",
        DJANGO_SECRET_KEY="x" * 20 + "a-long-random-production-secret-0123456789",
        DJANGO_ALLOWED_HOSTS="exchange.example.com",
    )
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key():
    result = run_manage(
        "check",
        DJANGO_SETTINGS_MODULE="exchange.settings.production",
        DJANGO_ALLOWED_HOSTS="exchange.example.com",
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in result.stderr


def test_development_settings_work_with_no_variables():
    result = run_manage("check")
    assert result.returncode == 0, result.stderr
