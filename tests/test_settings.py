"""Production settings: pass check --deploy with the required variables, refuse without a key
or an explicit list of trusted proxies; the proxies' one setting and uvicorn's flags from it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from exchange.settings.proxies import ProxySettingError, trusted_proxies, uvicorn_args
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
        DJANGO_SECRET_KEY=SECRET,
        DJANGO_ALLOWED_HOSTS="exchange.example.com",
        DJANGO_TRUSTED_PROXIES="10.0.0.5",
    )
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


SECRET = "x" * 20 + "a-long-random-production-secret-0123456789"


@pytest.mark.parametrize(
    ("proxies", "message"),
    [
        (None, "DJANGO_TRUSTED_PROXIES is not set: list the addresses of the reverse proxies"),
        ("", "DJANGO_TRUSTED_PROXIES is not set"),
        ("10.0.0.5, proxy.internal", "DJANGO_TRUSTED_PROXIES: 'proxy.internal' is not an IP"),
        ("*", "DJANGO_TRUSTED_PROXIES: '*' is not an IP address or network"),
    ],
)
def test_production_settings_refuse_to_start_without_an_explicit_list_of_proxies(proxies, message):
    env = {"DJANGO_TRUSTED_PROXIES": proxies} if proxies is not None else {}
    result = run_manage(
        "check",
        DJANGO_SETTINGS_MODULE="exchange.settings.production",
        DJANGO_SECRET_KEY=SECRET,
        DJANGO_ALLOWED_HOSTS="exchange.example.com",
        **env,
    )
    assert result.returncode != 0
    assert message in result.stderr


def test_production_settings_start_with_none_written_out():
    result = run_manage(
        "check",
        DJANGO_SETTINGS_MODULE="exchange.settings.production",
        DJANGO_SECRET_KEY=SECRET,
        DJANGO_ALLOWED_HOSTS="exchange.example.com",
        DJANGO_TRUSTED_PROXIES="none",
    )
    assert result.returncode == 0, result.stderr


def test_the_old_proxy_count_is_refused_with_what_replaces_it():
    result = run_manage("check", DJANGO_NUM_PROXIES="1")
    assert result.returncode != 0
    assert "DJANGO_NUM_PROXIES is replaced by DJANGO_TRUSTED_PROXIES" in result.stderr


@pytest.mark.parametrize(
    ("value", "proxies", "flags"),
    [
        (None, (), ["--no-proxy-headers"]),
        ("", (), ["--no-proxy-headers"]),
        (" None ", (), ["--no-proxy-headers"]),
        (
            "10.0.0.5",
            ("10.0.0.5",),
            ["--proxy-headers", "--forwarded-allow-ips", "10.0.0.5"],
        ),
        (
            "10.0.0.5, 10.1.2.3/16,::1",
            ("10.0.0.5", "10.1.0.0/16", "::1"),
            ["--proxy-headers", "--forwarded-allow-ips", "10.0.0.5,10.1.0.0/16,::1"],
        ),
    ],
)
def test_uvicorn_trusts_the_forwarded_headers_of_the_listed_proxies_alone(value, proxies, flags):
    assert trusted_proxies(value) == proxies
    assert uvicorn_args(proxies) == flags


@pytest.mark.parametrize("value", ["*", "localhost", "10.0.0.5,", "10.0.0.300"])
def test_anything_but_addresses_is_refused(value):
    with pytest.raises(ProxySettingError):
        trusted_proxies(value)


def test_ops_run_and_the_production_command_print_the_same_flags():
    result = subprocess.run(
        [sys.executable, "-m", "exchange.settings.proxies"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_TRUSTED_PROXIES": "10.0.0.5,10.0.1.0/24"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (
        0,
        "--proxy-headers --forwarded-allow-ips 10.0.0.5,10.0.1.0/24\n",
    )
    refused = subprocess.run(
        [sys.executable, "-m", "exchange.settings.proxies"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_TRUSTED_PROXIES": "*"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (refused.returncode, refused.stdout) == (2, "")


def test_production_settings_refuse_to_start_without_a_secret_key():
    result = run_manage(
        "check",
        DJANGO_SETTINGS_MODULE="exchange.settings.production",
        DJANGO_ALLOWED_HOSTS="exchange.example.com",
        DJANGO_TRUSTED_PROXIES="none",
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in result.stderr


def test_development_settings_work_with_no_variables():
    result = run_manage("check")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("value", ["1e20", "-1", "NaN", "lots"])
def test_a_default_spending_limit_no_limit_could_hold_is_refused(value):
    # A bid's placement refuses awards of 10^20 or more before its insert, as past any
    # limit (exchange/services/orders.py); a default that large would make that untrue.
    result = run_manage("check", SPENDING_LIMIT_DEFAULT=value)
    assert result.returncode != 0
    assert f"SPENDING_LIMIT_DEFAULT is {value!r}: give a number from 0 to below 10^20" in (
        result.stderr
    )


def test_the_largest_default_spending_limit_is_accepted():
    result = run_manage("check", SPENDING_LIMIT_DEFAULT="99999999999999999999.9999999999")
    assert result.returncode == 0, result.stderr


def test_a_webhook_lease_no_longer_than_a_delivery_task_can_hold_it_is_refused():
    # A shorter lease would let the next round queue a second task for a webhook whose task
    # still waits on its receiver (exchange/services/webhooks.py).
    result = run_manage(
        "check", WEBHOOK_LEASE_SECONDS="20", WEBHOOK_RUN_SECONDS="10", WEBHOOK_DEADLINE_SECONDS="10"
    )
    assert result.returncode != 0
    assert (
        "WEBHOOK_LEASE_SECONDS is 20: give more than WEBHOOK_RUN_SECONDS + "
        "WEBHOOK_DEADLINE_SECONDS (10 + 10), the longest a delivery task holds its webhook."
    ) in result.stderr


def test_a_webhook_lease_just_longer_than_a_delivery_task_can_hold_it_is_accepted():
    result = run_manage(
        "check",
        WEBHOOK_LEASE_SECONDS="20.5",
        WEBHOOK_RUN_SECONDS="10",
        WEBHOOK_DEADLINE_SECONDS="10",
    )
    assert result.returncode == 0, result.stderr
