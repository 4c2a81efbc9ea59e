"""The request's one trip to its thread (exchange/handler.py): the request's start, its view
and, unless the response is streamed, its end run on the request's lane, in that order and
once each; a streamed response goes out in parts and ends after its last part."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.core.signals import request_finished, request_started
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from exchange.handler import SyncChainHandler
from tests.asgi_http import asgi_get, http_scope

EVENTS: list[tuple[str, str]] = []


def _note(what: str) -> None:
    EVENTS.append((what, threading.current_thread().name))


def plain(request: HttpRequest) -> HttpResponse:
    _note("view")
    response = HttpResponse(b"x" * 10, content_type="text/plain")
    response.set_cookie("flavour", "plain")
    return response


def streamed(request: HttpRequest) -> StreamingHttpResponse:
    async def parts() -> AsyncIterator[bytes]:
        for part in (b"one", b"two", b"three"):
            _note(f"part {part.decode()}")
            yield part

    return StreamingHttpResponse(parts(), content_type="text/plain")


@csrf_exempt
def echo(request: HttpRequest) -> HttpResponse:
    return HttpResponse(request.body, content_type="application/octet-stream")


@csrf_exempt
def loop_of_sends(request: HttpRequest) -> HttpResponse:
    """Which loop ``async_to_sync`` runs a coroutine on from the request's thread (the
    channel-layer sends of ``exchange.realtime.streams`` go out this way)."""

    async def which() -> int:
        return id(asyncio.get_running_loop())

    return HttpResponse(str(async_to_sync(which)()).encode(), content_type="text/plain")


urlpatterns = [
    path("plain/", plain),
    path("streamed/", streamed),
    path("echo/", echo),
    path("loop/", loop_of_sends),
]


def _talk(app: SyncChainHandler, path: str, parts: list[bytes]) -> tuple[int, bytes, int]:
    """POST ``parts`` as the body's messages to ``path``: the status, the body and the id
    of the loop the request was served from."""

    async def scenario() -> tuple[int, bytes, int]:
        scope = http_scope(path, method="POST")
        talk = ApplicationCommunicator(app, scope)
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            await talk.send_input({"type": "http.request", "body": part, "more_body": not last})
        start = await talk.receive_output(10)
        body = await talk.receive_output(10)
        await talk.wait(10)
        return start["status"], body["body"], id(asyncio.get_running_loop())

    return asyncio.run(scenario())


@pytest.fixture
def recorded(settings):
    settings.ROOT_URLCONF = __name__
    EVENTS.clear()

    def started(**kwargs: Any) -> None:
        _note("started")

    def finished(**kwargs: Any) -> None:
        _note("finished")

    request_started.connect(started)
    request_finished.connect(finished)
    yield EVENTS
    request_started.disconnect(started)
    request_finished.disconnect(finished)


@pytest.mark.django_db(transaction=True)
def test_a_request_starts_runs_and_ends_on_its_lane_once_each(recorded):
    messages = asgi_get(SyncChainHandler(lanes=1), "/plain/")
    start, body = messages
    assert start["status"] == 200
    headers = dict(start["headers"])
    assert headers[b"Content-Type"] == b"text/plain"
    assert b"flavour=plain" in headers[b"Set-Cookie"]
    assert body == {"type": "http.response.body", "body": b"x" * 10, "more_body": False}
    assert [what for what, _ in recorded] == ["started", "view", "finished"]
    (thread,) = {thread for _, thread in recorded}
    assert thread.startswith("request-lane-0")


@pytest.mark.django_db(transaction=True)
def test_a_streamed_response_goes_out_in_parts_and_ends_after_them(recorded):
    messages = asgi_get(SyncChainHandler(lanes=1), "/streamed/")
    assert messages[0]["status"] == 200
    assert [m.get("body") for m in messages[1:]] == [b"one", b"two", b"three", None]
    assert [m.get("more_body", False) for m in messages[1:]] == [True, True, True, False]
    assert [what for what, _ in recorded] == [
        "started",
        "part one",
        "part two",
        "part three",
        "finished",
    ]


@pytest.mark.django_db(transaction=True)
def test_a_missing_page_is_a_404_through_the_handler(recorded):
    messages = asgi_get(SyncChainHandler(lanes=1), "/no-such-page/")
    assert messages[0]["status"] == 404
    assert [what for what, _ in recorded] == ["started", "finished"]


@pytest.mark.django_db(transaction=True)
def test_a_body_in_one_message_or_in_several_reaches_the_view_whole(recorded):
    app = SyncChainHandler(lanes=1)
    assert _talk(app, "/echo/", [b"one message"])[:2] == (200, b"one message")
    assert _talk(app, "/echo/", [b"several ", b"mess", b"ages"])[:2] == (200, b"several messages")
    assert _talk(app, "/echo/", [b""])[:2] == (200, b"")


@pytest.mark.django_db(transaction=True)
def test_async_to_sync_on_a_lane_runs_on_the_servers_loop(recorded):
    status, body, server_loop = _talk(SyncChainHandler(lanes=1), "/loop/", [b""])
    assert status == 200
    assert int(body) == server_loop
