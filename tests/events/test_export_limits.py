"""What one event-log export (``GET /api/v1/events/?format=jsonl|csv``) may hold: at most
``EVENT_EXPORTS_PER_PROCESS`` stream at once per process, and one whose client leaves or
stops reading gives its database connection and transaction back at once.

An export holds a pooled connection until its response is closed; before these limits,
three clients that never read held three connections (and open transactions) for as long
as they stayed connected, and with a pool of 3 every other request failed."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from typing import Any

import psycopg
import pytest
from django.db import connection

from exchange.api import events as events_api
from exchange.api.events import ExportSlots
from exchange.handler import SyncChainHandler
from tests.api.conftest import client_for
from tests.asgi_http import http_scope
from tests.factories import UserFactory
from tests.history.logs import log_write

# Enough events for an export of several parts (2,000 lines each) and many sends.
TOTAL = 9_000
REFUSED = {
    "error": {
        "code": "too_many_exports",
        "message": "This server streams at most 2 exports at once; retry, or read format=json "
        "pages. Expected available in 5 seconds.",
        "retry_after": 5,
    }
}


@pytest.fixture
def slots(settings, monkeypatch) -> ExportSlots:
    """Two exports at once, any two clients' or one's, counted from nothing (other tests'
    unread responses keep theirs in the process's count)."""
    settings.EVENT_EXPORTS_PER_PROCESS = 2
    settings.EVENT_EXPORTS_PER_CLIENT = 2
    fresh = ExportSlots()
    monkeypatch.setattr(events_api, "EXPORT_SLOTS", fresh)
    return fresh


def _log() -> None:
    base = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    log_write(
        [
            (
                ("best_offer", "office.supplies.pencils", None, {"offer": i, "value": "1.25"}),
                base + dt.timedelta(milliseconds=i),
            )
            for i in range(TOTAL)
        ]
    )


@pytest.mark.django_db
def test_an_export_past_the_limit_is_refused_while_the_others_stream(slots):
    # Given two exports streaming (one has sent a part, the other has not begun)
    _log()
    client = client_for(None)
    first = client.get("/api/v1/events/?format=jsonl")
    next(iter(first.streaming_content))
    second = client.get("/api/v1/events/?format=csv")

    # When a third export and a page are asked for
    third = client.get("/api/v1/events/?format=jsonl&type=best_offer")
    page = client.get("/api/v1/events/?limit=1")

    # Then the export is refused as the throttles refuse, and the page is served
    assert (first.status_code, second.status_code) == (200, 200)
    assert third.status_code == 429
    assert third["Retry-After"] == "5"
    assert third.json() == REFUSED
    assert page.status_code == 200
    assert [e["seq"] for e in page.json()["results"]] == [1]
    assert slots.taken == 2
    first.close()
    second.close()


@pytest.mark.django_db
def test_a_slot_is_given_back_when_its_export_ends_or_is_closed_unread(slots):
    _log()
    client = client_for(None)
    read_whole = client.get("/api/v1/events/?format=csv")
    closed_unread = client.get("/api/v1/events/?format=jsonl")
    assert client.get("/api/v1/events/?format=jsonl").json() == REFUSED

    # an export read to its end gives its slot back
    assert b"".join(read_whole.streaming_content).count(b"\n") == TOTAL + 1  # and the header
    assert slots.taken == 1
    again = client.get("/api/v1/events/?format=jsonl")
    assert again.status_code == 200
    assert client.get("/api/v1/events/?format=csv").json() == REFUSED

    # and so does one closed without being read (a client that left before the first part),
    # once only however often it is closed
    closed_unread.close()
    closed_unread.close()
    assert slots.taken == 1
    again.close()
    assert slots.taken == 0


@pytest.mark.django_db
def test_one_client_holds_at_most_its_share_and_others_still_stream(slots, settings):
    # Given a process of three slots, one a client, and one address streaming an export
    settings.EVENT_EXPORTS_PER_PROCESS = 3
    settings.EVENT_EXPORTS_PER_CLIENT = 1
    _log()
    alice = UserFactory(username="alice")
    first = client_for(None).get("/api/v1/events/?format=jsonl", REMOTE_ADDR="10.0.0.1")

    # When the same address asks for a second export, alice for one from that address,
    # and alice for another from another address
    again = client_for(None).get("/api/v1/events/?format=csv", REMOTE_ADDR="10.0.0.1")
    alices = client_for(alice).get("/api/v1/events/?format=jsonl", REMOTE_ADDR="10.0.0.1")
    alices_again = client_for(alice).get("/api/v1/events/?format=csv", REMOTE_ADDR="10.0.0.9")

    # Then each client (an account, or an address without one) streams one, and a second
    # is refused as a full process is, saying why, though the process has a slot free
    assert [r.status_code for r in (first, again, alices, alices_again)] == [200, 429, 200, 429]
    refused = {
        "error": {
            "code": "too_many_exports",
            "message": "This server streams at most one export at once to one client, and you "
            "have that many streaming; retry once one ends, or read format=json pages. "
            "Expected available in 5 seconds.",
            "retry_after": 5,
        }
    }
    assert again.json() == alices_again.json() == refused
    assert again["Retry-After"] == "5"
    assert (slots.taken, slots.by_client) == (2, {"addr:10.0.0.1": 1, f"user:{alice.pk}": 1})

    # and once a client's export has ended it may stream again; a client none of whose
    # exports stream is not counted at all
    assert b"".join(first.streaming_content).count(b"\n") == TOTAL
    assert slots.by_client == {f"user:{alice.pk}": 1}
    after = client_for(None).get("/api/v1/events/?format=csv", REMOTE_ADDR="10.0.0.1")
    assert after.status_code == 200
    for stream in (after, alices):
        b"".join(stream.streaming_content)
    assert (slots.taken, slots.by_client) == (0, {})


def _others(own: int) -> list[tuple[str, str]]:
    """(state, last statement) of every other client session on the test database than
    the test's own (``own``) and this look's that is doing something or holds a
    transaction: a connection earlier tests left open and idle (a thread's, say) holds
    neither, and is not what these tests are about."""
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as look:
        rows = look.execute(
            "SELECT state, query FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid NOT IN (pg_backend_pid(), %s) "
            "AND state <> 'idle'",
            [own],
        ).fetchall()
    return [(state, query) for state, query in rows]


def _others_ended(own: int) -> list[tuple[str, str]]:
    """``_others(own)`` once it is empty, or as it stands after 10 s. A session whose
    connection was closed while its statement ran ends when PostgreSQL next writes to it
    (a whole-suite run once found the previous test's export still "active" when this looked,
    right after its connection was closed)."""
    deadline = time.monotonic() + 10
    while (others := _others(own)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return others


def _own_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


class Client:
    """An HTTP client of the ASGI application that asks for one export, takes the
    response's start and its first body message, and then reads nothing more: every later
    send waits until the client leaves (``leave``), as a send to a client that does not read
    waits in uvicorn; after that sends return at once, as uvicorn's do. ``messages`` holds
    every message the application sent, after the client left too."""

    def __init__(self, query: bytes) -> None:
        self.scope = http_scope("/api/v1/events/", query=query)
        self.messages: list[dict[str, Any]] = []
        self.gone = asyncio.Event()
        self.reading = asyncio.Event()  # the first body message came
        self._asked = False

    async def receive(self) -> dict[str, Any]:
        if not self._asked:
            self._asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if message["type"] == "http.response.body" and not self.gone.is_set():
            self.reading.set()
            await self.gone.wait()

    def leave(self) -> None:
        self.gone.set()


@pytest.mark.django_db(transaction=True)
def test_an_export_whose_client_leaves_ends_its_read_and_gives_its_connection_back(slots):
    # Given a log of several parts, and the test's own session
    _log()
    own = _own_pid()
    client = Client(b"format=jsonl")

    async def scenario() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        served = asyncio.ensure_future(
            SyncChainHandler(lanes=1)(client.scope, client.receive, client.send)
        )
        # When the client has the first part and reads no more
        await client.reading.wait()
        during = await asyncio.to_thread(_others, own)
        # and then leaves
        client.leave()
        await served
        return during, await asyncio.to_thread(_others, own)

    during, after = asyncio.run(scenario())

    # Then while it did not read, the export held a session in a transaction, its page's
    # cursor open; once it left, nothing more was sent (the read stopped rather than run to
    # its end for nobody), and the session and the slot are gone
    assert during == [("idle in transaction", 'FETCH FORWARD 2000 FROM "history_page"')]
    assert [m["type"] for m in client.messages] == ["http.response.start", "http.response.body"]
    assert client.messages[0]["status"] == 200
    assert client.messages[1]["more_body"] is True
    assert after == []
    assert slots.taken == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_an_export_whose_client_stops_reading_is_ended_after_the_stall_time(
    kind, slots, settings, caplog
):
    # Given a client that takes the first body message and never reads again, nor leaves
    _log()
    own = _own_pid()
    settings.STREAM_STALL_SECONDS = 0.1
    client = Client(f"format={kind}".encode())

    # When the export is served to it
    with caplog.at_level(logging.WARNING, logger="exchange.handler"):
        asyncio.run(SyncChainHandler(lanes=1)(client.scope, client.receive, client.send))

    # Then it was ended unfinished after its one message, and its session and slot are gone
    assert [m["type"] for m in client.messages] == ["http.response.start", "http.response.body"]
    assert client.messages[1]["more_body"] is True
    assert _others_ended(own) == []
    assert slots.taken == 0
    assert [r.getMessage() for r in caplog.records if r.name == "exchange.handler"] == [
        "a streamed response's client took nothing for 0.1 s: it is ended"
    ]
