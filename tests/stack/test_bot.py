"""The example trading bot (ops/examples/bot.py) against the live test server."""

from __future__ import annotations

import subprocess
import sys

import pytest

from exchange.services.orders import offer_publish
from tests.factories import UserFactory, pencils_market
from tests.livestack import ROOT

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def test_bot_places_amends_and_ends_best(live_stack):
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(username="seller"),
        market=market,
        constraint="lot BETWEEN 1000 AND 10000 AND price >= 0.90",
    )
    UserFactory(username="botuser")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "ops" / "examples" / "bot.py"),
            "--url",
            live_stack.url,
            "--user",
            "botuser",
            "--password",
            "pw-for-tests-1",
            "--market",
            market.subject,
            "--constraint",
            "lot IN [2000, 5000] AND price <= 1.10",
            "--raise-to",
            "1.20",
            "--watch",
            "6",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "market office.supplies.pencils: lot (int), price (decimal); "
        "tick 0.01, first-price auctions"
    )
    assert lines[1].endswith(": lot BETWEEN 2000 AND 5000 AND price <= 1.10")
    assert lines[2].startswith("amended to v2: lot BETWEEN 2000 AND 5000 AND price <= 1.20")
    assert any(line.startswith("notification #") and "best_bid" in line for line in lines)
    assert lines[-1].endswith(f"offer {offer.pk} at 1.20 (best)")
