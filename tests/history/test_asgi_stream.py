"""``format=jsonl`` under ASGI (how uvicorn serves it): part by part, in bounded memory.

Django serves a synchronous iterator under ASGI by reading it whole into a list first;
the events API's response pulls one part at a time instead."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import tracemalloc
import warnings

import pytest
from asgiref.sync import async_to_sync
from django.core.handlers.asgi import ASGIHandler

from tests.history.logs import log_write

TOTAL = 60_000


def asgi_get(query: bytes) -> dict:
    """GET /api/v1/events/?<query> through Django's ASGI handler, counting the body
    without keeping it."""
    seen = {"status": None, "size": 0, "lines": 0, "first": b"", "last": b"", "messages": 0}

    async def run() -> None:
        requested = False

        async def receive():
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.Future()  # the client stays until the response ends

        async def send(message):
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
            elif message["type"] == "http.response.body" and message.get("body"):
                body = message["body"]
                if not seen["first"]:
                    seen["first"] = body[: body.index(b"\n")]
                seen["size"] += len(body)
                seen["lines"] += body.count(b"\n")
                seen["last"] = (seen["last"] + body)[-400:]
                seen["messages"] += 1

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": "/api/v1/events/",
            "raw_path": b"/api/v1/events/",
            "query_string": query,
            "root_path": "",
            "headers": [(b"host", b"testserver")],
            "client": ("127.0.0.1", 40000),
            "server": ("testserver", 80),
        }
        await ASGIHandler()(scope, receive, send)

    async_to_sync(run)()
    return seen


@pytest.mark.django_db(transaction=True)
def test_jsonl_under_asgi_streams_part_by_part_in_bounded_memory():
    # Given a log of 60,000 events (committed: the ASGI handler reads on its own thread)
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
    # (a first, short read loads the URLconf and the API's modules)
    assert asgi_get(f"format=jsonl&after={TOTAL - 3}".encode())["lines"] == 3
    # When it is read as jsonl through the ASGI handler
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Django warns when it lists a sync iterator
        seen = asgi_get(b"format=jsonl")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Then every line arrived, in many body messages, and the read never held much of it
    assert seen["status"] == 200
    assert seen["lines"] == TOTAL
    assert json.loads(seen["first"]) == {
        "seq": 1,
        "time": "2026-11-20T00:00:00Z",
        "type": "best_offer",
        "subject": "office.supplies.pencils",
        "offer": 0,
        "value": "1.25",
    }
    assert json.loads(seen["last"].splitlines()[-1])["seq"] == TOTAL
    assert seen["size"] > 6_000_000 and seen["messages"] > 30
    assert peak < 3_000_000, peak
