"""The example subscription bot (ops/examples/subscription_bot.py) against the live stack:
it registers a hybrid subscription (trades since an hour ago) and a pattern (a trade, then
one more than 5% dearer), follows both ``sub:<id>`` streams, closes its socket once while
trades keep coming, resumes, and on exit deletes what it registered. What it printed must be
each subscription's outbox exactly: ``n`` 1, 2, 3, ... with no gap and no duplicate."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from exchange.models import Subscription, SubscriptionNotification
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from tests.factories import UserFactory, pencils_market
from tests.livestack import ROOT

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]

NOTE = re.compile(r"^(sub:\d+) n=(\d+) seq=(\d+) (\{.*\})$")


def _trade(market, seller, buyer, price: str) -> None:
    """A trade at ``price``: an auction, one bid with that limit, matched and closed."""
    offer = offer_publish(seller=seller, market=market, constraint="lot = 10 AND price >= 0.50")
    bid_place(buyer=buyer, market=market, constraint=f"lot = 10 AND price <= {price}")
    matching_cycle_run()
    assert offer_close(offer_id=offer.pk, staff=None).trade is not None


def test_the_bot_prints_each_notification_once_in_order_across_a_forced_reconnect(live_stack):
    market = pencils_market()
    seller, buyer = UserFactory(username="seller"), UserFactory(username="buyer")
    UserFactory(username="botuser")
    for price in ("1.00", "1.10"):  # history for the hybrid subscription
        _trade(market, seller, buyer, price)

    command = [
        sys.executable,
        str(ROOT / "ops" / "examples" / "subscription_bot.py"),
        *("--url", live_stack.url, "--user", "botuser", "--password", "pw-for-tests-1"),
        *("--market", market.subject, "--since", "1h", "--jump", "5"),
        *("--drop-after", "2", "--pause", "2", "--count", "7", "--watch", "300"),
    ]
    bot = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert bot.stdout is not None
        lines = []
        # the two history trades come first; then the bot closes its socket
        while not (line := bot.stdout.readline()).startswith("closing the socket"):
            assert line, "".join(lines) + (bot.stderr.read() if bot.stderr else "")
            lines.append(line)
        lines.append(line)
        # three more trades while it reconnects and after: the pattern sees 1.20 -> 1.30
        # and 1.30 -> 1.40 (each more than 5% up)
        for price in ("1.20", "1.30", "1.40"):
            _trade(market, seller, buyer, price)
        out, err = bot.communicate(timeout=300)
    finally:
        bot.kill()
    assert bot.returncode == 0, "".join(lines) + out + err
    lines = [line.rstrip("\n") for line in lines] + out.splitlines()

    hybrid, pattern = Subscription.objects.filter(owner__username="botuser").order_by("id")
    assert lines[:3] == [
        f"registered sub:{hybrid.pk} (events): SELECT price, quantity WHERE type = 'trade', "
        "subject = 'office.supplies.pencils', start_time = NOW - 1h",
        f"registered sub:{pattern.pk} (pattern): SELECT a.price, b.price FROM "
        "FILTER{type = 'trade' AND subject = 'office.supplies.pencils'}(EVENTS) AS a "
        "NEXT{b.price > 1.05 * a.price} FILTER{type = 'trade' AND subject = "
        "'office.supplies.pencils'}(EVENTS) AS b WITHIN 1h",
        f"following sub:{hybrid.pk} after n=0, sub:{pattern.pk} after n=0",
    ]
    assert "closing the socket after 2 notifications" in lines
    assert f"following sub:{hybrid.pk} after n=2, sub:{pattern.pk} after n=0" in lines

    printed: dict[str, list[tuple[int, int, dict]]] = {}
    for line in lines:
        if match := NOTE.match(line):
            stream, n, seq, data = match.groups()
            printed.setdefault(stream, []).append((int(n), int(seq), json.loads(data)))

    # exactly each outbox, n running 1, 2, 3, ... with no gap and no duplicate
    for sub in (hybrid, pattern):
        outbox = [
            (note.n, note.seq, note.data)
            for note in SubscriptionNotification.objects.filter(subscription=sub).order_by("n")
        ]
        assert printed[f"sub:{sub.pk}"] == outbox
        assert [n for n, _, _ in outbox] == list(range(1, len(outbox) + 1))
    assert [data["price"] for _, _, data in printed[f"sub:{hybrid.pk}"]] == [
        "1.00",
        "1.10",
        "1.20",
        "1.30",
        "1.40",
    ]
    assert [data for _, _, data in printed[f"sub:{pattern.pk}"]] == [
        {"a.price": "1.20", "b.price": "1.30"},
        {"a.price": "1.30", "b.price": "1.40"},
    ]

    # on its way out it deleted both
    assert lines[-3:] == [
        "printed 7 notifications",
        f"on exit: sub:{hybrid.pk} is done (deleted)",
        f"on exit: sub:{pattern.pk} is done (deleted)",
    ]
    hybrid.refresh_from_db()
    pattern.refresh_from_db()
    assert [(s.state, s.reason) for s in (hybrid, pattern)] == [("done", "deleted")] * 2
