"""The example trading bot (ops/examples/bot.py) against the live test server."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from exchange.models import Bid
from exchange.services.orders import offer_publish
from tests.factories import UserFactory, pencils_market
from tests.livestack import ROOT

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def bot_command(url: str, market: str, constraint: str, *options: str) -> list[str]:
    """The example bot's command line, as the test user ``botuser``."""
    return [
        sys.executable,
        str(ROOT / "ops" / "examples" / "bot.py"),
        *("--url", url, "--user", "botuser", "--password", "pw-for-tests-1"),
        *("--market", market, "--constraint", constraint),
        *options,
    ]


def test_bot_places_amends_and_ends_best(live_stack):
    market = pencils_market()
    offer = offer_publish(
        seller=UserFactory(username="seller"),
        market=market,
        constraint="lot BETWEEN 1000 AND 10000 AND price >= 0.90",
    )
    UserFactory(username="botuser")
    result = subprocess.run(
        bot_command(
            live_stack.url,
            market.subject,
            "lot IN [2000, 5000] AND price <= 1.10",
            "--raise-to",
            "1.20",
            "--watch",
            "6",
        ),
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
    assert lines[-2].endswith(f"offer {offer.pk} at 1.20 (best)")
    # On its way out it withdraws what it placed
    bid = Bid.objects.get(buyer__username="botuser")
    assert lines[-1] == f"on exit: bid {bid.pk} is withdrawn"
    assert (bid.state, bid.version) == ("withdrawn", 2)


def test_an_interrupted_bot_withdraws_its_bid_and_keep_leaves_it(live_stack):
    market = pencils_market()
    UserFactory(username="botuser")
    command = bot_command(
        live_stack.url, market.subject, "lot = 3000 AND price <= 1.10", "--watch", "600"
    )
    bot = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert bot.stdout is not None
        while not (line := bot.stdout.readline()).startswith("placed bid"):
            assert line, bot.stderr.read() if bot.stderr else ""
        bot.send_signal(signal.SIGINT)
        out, err = bot.communicate(timeout=120)
    finally:
        bot.kill()
    bid = Bid.objects.get(buyer__username="botuser")
    assert bot.returncode == 130, out + err
    assert out.splitlines()[-2:] == ["interrupted", f"on exit: bid {bid.pk} is withdrawn"]
    assert bid.state == "withdrawn"

    # With --keep the bid stays live
    kept = subprocess.run(
        [*command[:-1], "1", "--keep"], capture_output=True, text=True, timeout=120
    )
    assert kept.returncode == 1, kept.stdout + kept.stderr  # it matches no offer: not best
    assert "on exit" not in kept.stdout
    assert list(
        Bid.objects.filter(buyer__username="botuser").values_list("state", flat=True).order_by("id")
    ) == [
        "withdrawn",
        "active",
    ]
