"""Faults on the real stack (SPEC 9, loopback only): a worker killed mid-cycle, PostgreSQL
restarted while bids arrive, Redis stopped. No acknowledged order and no notification is lost,
and the best-offer table ends equal to a recomputation."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest
import websockets
from django.conf import settings
from django.db import connection
from rest_framework.authtoken.models import Token

from exchange.models import BestOffer, Bid, Notification, OrderChange
from exchange.services.matching import CYCLE_LOCK
from exchange.services.orders import bid_place, offer_publish
from exchange.services.verification import best_offers_verify
from tests.factories import UserFactory, pencils_market
from tests.livestack import ROOT
from tests.stack.test_matching_worker import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


@pytest.fixture
def beat(live_stack):
    """Celery beat, whose sweep repairs what a fault left behind."""
    live_stack.start_beat()
    yield
    live_stack.processes.pop("beat").stop()


def settled():
    return not OrderChange.objects.filter(processed_at=None).exists()


def dsn() -> str:
    db = settings.DATABASES["default"]
    return (
        f"host={db['HOST']} port={db['PORT']} user={db['USER']} password={db['PASSWORD']} "
        f"dbname={connection.settings_dict['NAME']}"
    )


async def resume_all(url: str, token: str, count: int) -> list[dict]:
    """Connect, resume ``me`` from the start, and collect notifications until ``count`` came
    (and a short quiet moment proves no duplicate follows)."""
    async with websockets.connect(f"{url}?token={token}") as ws:
        await ws.send(json.dumps({"action": "resume", "stream": "me", "after": 0}))
        frames = []
        while True:
            try:
                frame = json.loads(
                    await asyncio.wait_for(ws.recv(), 1.5 if len(frames) >= count else 30)
                )
            except TimeoutError:
                return frames
            if frame.get("type") == "notification":
                frames.append(frame)


def token(user) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def test_worker_killed_mid_cycle_loses_nothing(live_stack, beat):
    market = pencils_market()
    alice = UserFactory(username="alice")
    offer = offer_publish(
        seller=UserFactory(username="seller"),
        market=market,
        constraint="lot BETWEEN 1 AND 100 AND price >= 1.00",
    )
    wait_for(settled, "the offer's cycle")

    # Hold the offer's best-offer row so that the next cycle stops in the middle of its
    # transaction, after it has updated the store and the matches.
    blocker = psycopg.connect(dsn())
    try:
        blocker.execute(
            "SELECT 1 FROM exchange_bestoffer WHERE offer_id = %s FOR UPDATE", [offer.pk]
        )
        bid = bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 1.25")

        def cycle_waiting():
            # From a connection of its own: inside a transaction pg_stat_activity is a snapshot.
            with psycopg.connect(dsn(), autocommit=True) as watcher:
                row = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query ILIKE '%%exchange_bestoffer%%'"
                ).fetchone()
            return row[0] > 0

        wait_for(cycle_waiting, "the cycle to block on the best-offer row")
        live_stack.processes["matching"].kill()
    finally:
        blocker.rollback()
        blocker.close()

    # The killed cycle's transaction rolled back: the bid is there, its change still pending.
    assert Bid.objects.filter(pk=bid.pk, state="active").exists()
    assert BestOffer.objects.get(offer=offer).bid_id is None

    live_stack.start_worker(role="matching", concurrency=1)
    row = wait_for(
        lambda: BestOffer.objects.filter(offer=offer, bid=bid).first(), "the sweep to repair"
    )
    assert str(row.value) == "1.2500000000"
    wait_for(settled, "every change processed")
    assert best_offers_verify().clean
    frames = asyncio.run(resume_all(live_stack.ws_url, token(alice), 1))
    assert [f["data"]["type"] for f in frames] == ["best_bid"]
    assert len({f["seq"] for f in frames}) == len(frames)


def restart_postgres():
    """Restart the test cluster (fast shutdown: every connection is cut)."""
    pg_bin = max(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))
    data = ROOT / ".data" / "test" / "pg"
    if (link := ROOT / ".data" / "test" / "pg.link").exists():
        data = link.resolve() / "pg"
    if not (data / "postmaster.pid").exists():
        pytest.skip("the test PostgreSQL was not started by this checkout's ops/services")
    # -l and no pipes: the new postmaster must not inherit this process's stdout.
    subprocess.run(
        [
            "runuser",
            "-u",
            "postgres",
            "--",
            str(pg_bin / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(data / "server.log"),
            "-m",
            "fast",
            "-w",
            "-t",
            "60",
            "restart",
        ],
        check=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=150,
    )


def test_postgres_restart_while_bids_arrive_keeps_every_acknowledged_order(live_stack, beat):
    market = pencils_market()
    buyer = UserFactory(username="bob")
    offer_publish(
        seller=UserFactory(username="seller"), market=market, constraint="lot = 5 AND price >= 1.00"
    )
    key = token(buyer)
    acknowledged: dict[int, str] = {}
    failures: list[int | str] = []
    stop = threading.Event()

    def client():
        api = httpx.Client(
            base_url=live_stack.url + "/api/v1",
            timeout=10,
            headers={"Authorization": f"Token {key}"},
        )
        n = 0
        while not stop.is_set() and n < 400:
            n += 1
            text = f"lot = 5 AND price <= {1 + n / 100:.2f}"
            try:
                response = api.post("/bids/", json={"market": market.subject, "constraint": text})
            except httpx.TimeoutException:
                failures.append("timeout")
                continue
            except httpx.TransportError:
                failures.append("transport")
                continue
            if response.status_code == 201:
                acknowledged[response.json()["id"]] = response.json()["constraint"]
            else:
                failures.append(response.status_code)
            time.sleep(0.02)

    thread = threading.Thread(target=client)
    thread.start()
    wait_for(lambda: len(acknowledged) >= 10, "bids before the restart")
    restart_postgres()
    connection.close()  # this process's connection died with the server
    before = len(acknowledged)
    wait_for(lambda: len(acknowledged) >= before + 10, "bids after the restart")
    stop.set()
    thread.join(timeout=60)

    assert "timeout" not in failures  # the API answered during the outage, it did not hang
    assert all(f in (503, "transport") for f in failures), failures
    stored = dict(Bid.objects.filter(buyer=buyer).values_list("id", "constraint_text"))
    assert {k: stored.get(k) for k in acknowledged} == acknowledged
    wait_for(settled, "the sweep to process every change")
    assert best_offers_verify().clean


def redis_cli(*args: str) -> None:
    port = settings.REDIS_URL.rsplit(":", 1)[1].split("/")[0]
    subprocess.run(
        ["redis-cli", "-h", "127.0.0.1", "-p", port, *args], capture_output=True, timeout=30
    )


def test_orders_are_accepted_while_redis_is_down_and_notified_after(live_stack, beat):
    market = pencils_market()
    carol = UserFactory(username="carol")
    offer = offer_publish(
        seller=UserFactory(username="seller"),
        market=market,
        constraint="lot BETWEEN 1 AND 9 AND price >= 1.00",
    )
    wait_for(settled, "the offer's cycle")
    api = httpx.Client(
        base_url=live_stack.url + "/api/v1",
        timeout=30,
        headers={"Authorization": f"Token {token(carol)}"},
    )
    redis_cli("shutdown")
    try:
        response = api.post(
            "/bids/", json={"market": market.subject, "constraint": "lot = 3 AND price <= 1.40"}
        )
        assert response.status_code == 201, response.text
        assert Bid.objects.filter(pk=response.json()["id"]).exists()
        assert not settled()
    finally:
        subprocess.run(
            [str(ROOT / "ops" / "services"), "--test", "start"], check=True, capture_output=True
        )

    wait_for(
        lambda: BestOffer.objects.filter(offer=offer, bid_id=response.json()["id"]).exists(),
        "the cycle once Redis is back",
        timeout=90,
    )
    wait_for(
        lambda: not Notification.objects.filter(delivered_at=None).exists(), "delivery", timeout=90
    )
    frames = asyncio.run(resume_all(live_stack.ws_url, token(carol), 1))
    assert [f["data"]["type"] for f in frames] == ["best_bid"]


def test_a_poisoned_order_is_set_aside_and_the_live_worker_carries_on(live_stack):
    # A bid whose stored text is broken behind the services' back (SQL), changed in the same
    # batch as good orders: the real worker's cycle sets it aside, notifies its owner over
    # the WebSocket, and matches the others in that run.
    market = pencils_market()
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    offer = offer_publish(
        seller=UserFactory(username="seller"),
        market=market,
        constraint="lot BETWEEN 1 AND 100 AND price >= 1.00",
    )
    wait_for(settled, "the offer's cycle")
    with connection.cursor() as cursor:
        # Hold the cycle lock so that the bad bid and the good one land in one batch.
        cursor.execute("SELECT pg_advisory_lock(%s)", [CYCLE_LOCK])
        try:
            bad = bid_place(buyer=alice, market=market, constraint="lot = 10 AND price <= 2.00")
            Bid.objects.filter(pk=bad.pk).update(constraint_text="price <= AND lot")
            good = bid_place(buyer=bob, market=market, constraint="lot = 10 AND price <= 1.50")
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [CYCLE_LOCK])

    row = wait_for(
        lambda: BestOffer.objects.filter(offer=offer, bid=good).first(), "the good bid to match"
    )
    assert str(row.value) == "1.5000000000"
    wait_for(settled, "every change processed")
    bad.refresh_from_db()
    assert bad.set_aside_at is not None and bad.state == "active"
    assert best_offers_verify().clean
    frames = asyncio.run(resume_all(live_stack.ws_url, token(alice), 1))
    assert [(f["data"]["type"], f["data"]["bid"]) for f in frames] == [("set_aside", bad.pk)]
