"""The stack is real: ASGI server, Celery worker, Redis and the channel layer across processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest
import redis
import websockets

from exchange.celery import app
from exchange.settings.web_tier import SOCKET_WORKERS, worker_count
from exchange.tasks import ping
from tests.livestack import ROOT, process_env, staff_browser
from tests.stack.test_matching_worker import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.django_db(transaction=True)]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_home_page_answers(live_stack):
    status, body = get(live_stack.url + "/")
    assert status == 200
    assert "<h1>Markets</h1>" in body


def test_healthz_reports_every_component_up(live_stack):
    # The socket processes start beside the HTTP ones and count once they take connections
    wait_for(lambda: get(live_stack.url + "/healthz")[0] == 200, "the stack up", timeout=60)
    status, body = get(live_stack.url + "/healthz")
    assert (status, json.loads(body)) == (200, {"ok": True})  # anonymous: the bare status
    with contextlib.closing(staff_browser(live_stack.url, "healthz-staff", timeout=10)) as browser:
        response = browser.get("/healthz")
    report = response.json()
    assert response.status_code == 200, report
    assert report["ok"] is True
    # The web tier's socket processes, when it has any (ops/run's default: one)
    sockets = worker_count(SOCKET_WORKERS, live_stack.env)
    assert set(report["components"]) == {
        "database",
        "redis",
        "celery_worker",
        "matching_worker",
        "channel_layer",
        "subscription_engine",
    } | ({"socket_workers"} if sockets else set())
    assert all(c["ok"] for c in report["components"].values())
    if sockets:
        assert report["components"]["socket_workers"] == {
            "ok": True,
            "alive": [f"socket{i}" for i in range(sockets)],
            "down": [],
            "upgrades": "handed_over",
        }
    assert report["components"]["database"]["btree_gist"] is not None
    # Each live worker's heartbeat, by the name the test stack gave it, under its role.
    components = report["components"]
    assert components["celery_worker"]["workers"] == [live_stack.worker_name("tasks")]
    assert components["matching_worker"]["workers"] == [live_stack.worker_name("matching")]
    assert components["matching_worker"]["uncovered_partitions"] == []


def test_a_task_round_trips_through_the_worker(live_stack):
    token = uuid.uuid4().hex
    sent = ping.delay(token)
    # The stored result is read, not awaited on the result backend's Redis subscription:
    # the fault tests restart Redis earlier in the session, and a subscription this process
    # opened before that never hears again (the worker's log showed the ping answered in
    # 6 ms while .get() waited its 30 s out).
    deadline = time.monotonic() + 30
    meta: dict = {}
    while meta.get("status") != "SUCCESS":
        assert time.monotonic() < deadline, f"no answer to the ping in 30 s: {meta}"
        time.sleep(0.1)
        try:
            meta = app.backend.get_task_meta(sent.id)
        except redis.ConnectionError:
            meta = {}  # a pooled connection from before the restart: the next try reconnects
    assert meta["result"] == f"pong:{token}"


def test_websocket_client_receives_a_frame_sent_from_another_process(live_stack, transactional_db):
    marker = uuid.uuid4().hex
    sender = (
        "import django; django.setup();"
        "from exchange.realtime.streams import stream_publish;"
        f"stream_publish(stream='system', type='announcement', seq=7, data={{'text': '{marker}'}})"
    )

    async def scenario() -> list[dict]:
        async with websockets.connect(live_stack.ws_url, open_timeout=10) as ws:
            await ws.send(json.dumps({"action": "subscribe", "stream": "system"}))
            ack = json.loads(await asyncio.wait_for(ws.recv(), 10))
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                sender,
                cwd=ROOT,
                env=process_env(live_stack.database_name),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            _, err = await proc.communicate()
            assert proc.returncode == 0, err.decode()
            frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
            return [ack, frame]

    ack, frame = asyncio.run(scenario())
    assert ack == {"type": "subscribed", "stream": "system"}
    assert frame == {"stream": "system", "type": "announcement", "seq": 7, "data": {"text": marker}}


def test_bad_websocket_frames_get_error_frames_and_the_connection_stays_usable(live_stack):
    async def scenario() -> list[dict]:
        replies = []
        async with websockets.connect(live_stack.ws_url, open_timeout=10) as ws:
            for raw in [
                "not json",
                "[1, 2]",
                json.dumps({"action": "dance"}),
                json.dumps({"action": "subscribe", "stream": "nowhere"}),
                json.dumps({"action": "subscribe", "stream": "system"}),
            ]:
                await ws.send(raw)
                replies.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
        return replies

    replies = asyncio.run(scenario())
    assert [r.get("code") for r in replies[:4]] == [
        "bad_frame",
        "bad_frame",
        "unknown_action",
        "unknown_stream",
    ]
    assert all(r["type"] == "error" for r in replies[:4])
    assert replies[4] == {"type": "subscribed", "stream": "system"}
