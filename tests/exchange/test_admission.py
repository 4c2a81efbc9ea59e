"""The web tier's door (exchange/admission.py): at most ``limit`` HTTP requests inside the
application per process, the others waiting in arrival order; sockets pass straight through;
a response sent in parts gives its place up with its first part. Behind it, Django's
middleware chain in sync mode (exchange/handler.py) and one Redis pool per process for the
cache (exchange/cache.py)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from django.conf import settings as django_settings
from django.core.cache import caches
from django.core.signals import request_started

from exchange.admission import BODY_TOO_LARGE, AdmissionGate
from exchange.asgi import application
from exchange.cache import SharedConnectionPool
from exchange.handler import SyncChainHandler
from tests.asgi_http import asgi_get, http_scope


class Recorder:
    """An ASGI application that records who is inside and finishes a request when told."""

    def __init__(self) -> None:
        self.inside: set[str] = set()
        self.most_inside = 0
        self.entered: list[str] = []
        self.release: dict[str, asyncio.Event] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        name = scope["path"]
        self.entered.append(name)
        self.inside.add(name)
        self.most_inside = max(self.most_inside, len(self.inside))
        try:
            await self.release.setdefault(name, asyncio.Event()).wait()
            if scope.get("parts"):
                await send({"type": "http.response.body", "body": b"a", "more_body": True})
                await self.release.setdefault(name + "/rest", asyncio.Event()).wait()
            if scope.get("fails"):
                raise RuntimeError("the view broke")
            await send({"type": "http.response.body", "body": b"z", "more_body": False})
        finally:
            self.inside.discard(name)

    def finish(self, name: str) -> None:
        self.release.setdefault(name, asyncio.Event()).set()


async def _send(message: dict[str, Any]) -> None:
    return None


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b""}


def _start(gate: AdmissionGate, path: str, **scope: Any) -> asyncio.Task[None]:
    return asyncio.ensure_future(gate({"type": "http", "path": path, **scope}, _receive, _send))


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_at_most_limit_requests_are_inside_and_the_rest_enter_in_arrival_order():
    async def scenario() -> None:
        app = Recorder()
        gate = AdmissionGate(app, limit=2)
        tasks = [_start(gate, f"/r{i}") for i in range(6)]
        await _settle()
        assert app.inside == {"/r0", "/r1"}
        assert gate.in_flight == 2
        for name in ["/r1", "/r0", "/r2", "/r3", "/r4", "/r5"]:
            app.finish(name)
            await _settle()
        await asyncio.gather(*tasks)
        assert app.entered == [f"/r{i}" for i in range(6)]
        assert app.most_inside == 2
        assert gate.in_flight == 0

    asyncio.run(scenario())


def test_sockets_and_lifespan_pass_while_the_gate_is_full():
    async def scenario() -> None:
        app = Recorder()
        gate = AdmissionGate(app, limit=1)
        held = _start(gate, "/held")
        await _settle()
        socket = asyncio.ensure_future(gate({"type": "websocket", "path": "/ws"}, _receive, _send))
        await _settle()
        assert app.inside == {"/held", "/ws"}
        assert gate.in_flight == 1
        app.finish("/ws")
        app.finish("/held")
        await asyncio.gather(held, socket)

    asyncio.run(scenario())


def test_a_response_in_parts_gives_its_place_up_with_its_first_part():
    async def scenario() -> None:
        app = Recorder()
        gate = AdmissionGate(app, limit=1)
        stream = _start(gate, "/stream", parts=True)
        waiting = _start(gate, "/next")
        await _settle()
        assert app.inside == {"/stream"}
        app.finish("/stream")  # sends its first part, then keeps streaming
        await _settle()
        assert app.inside == {"/stream", "/next"}
        assert gate.in_flight == 1
        app.finish("/next")
        app.finish("/stream/rest")
        await asyncio.gather(stream, waiting)
        assert gate.in_flight == 0

    asyncio.run(scenario())


def test_a_request_that_fails_gives_its_place_back():
    async def scenario() -> None:
        app = Recorder()
        gate = AdmissionGate(app, limit=1)
        broken = _start(gate, "/broken", fails=True)
        after = _start(gate, "/after")
        app.finish("/broken")
        await _settle()
        with pytest.raises(RuntimeError, match="the view broke"):
            await broken
        assert app.inside == {"/after"}
        app.finish("/after")
        await after
        assert gate.in_flight == 0

    asyncio.run(scenario())


class BodyReader:
    """An ASGI application that reads the whole request body and keeps it."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies[scope["path"]] = body


def test_a_slow_body_is_read_outside_so_others_go_first():
    async def scenario() -> None:
        app = BodyReader()
        gate = AdmissionGate(app, limit=1)
        second_half = asyncio.Event()
        parts = [b"first half ", b"second half"]

        async def slow_receive() -> dict[str, Any]:
            if len(parts) == 1:
                await second_half.wait()
            return {"type": "http.request", "body": parts.pop(0), "more_body": bool(parts)}

        slow = asyncio.ensure_future(gate({"type": "http", "path": "/slow"}, slow_receive, _send))
        await _settle()
        fast = _start(gate, "/fast")
        await fast  # admitted while the slow client is still sending
        assert app.bodies == {"/fast": b""}
        assert gate.in_flight == 0
        second_half.set()
        await slow
        assert app.bodies["/slow"] == b"first half second half"

    asyncio.run(scenario())


def test_a_large_body_is_read_whole_before_it_enters():
    async def scenario() -> None:
        app = BodyReader()
        gate = AdmissionGate(app, limit=1, body_limit=1024 * 1024)
        chunk = b"x" * (256 * 1024)
        chunks = [chunk, chunk, b"tail"]
        inside_while_sending = []

        async def receive() -> dict[str, Any]:
            inside_while_sending.append(gate.in_flight)
            await asyncio.sleep(0)
            return {"type": "http.request", "body": chunks.pop(0), "more_body": bool(chunks)}

        await gate({"type": "http", "path": "/upload"}, receive, _send)
        assert app.bodies["/upload"] == chunk + chunk + b"tail"
        assert inside_while_sending == [0, 0, 0]  # the place was taken after the last part

    asyncio.run(scenario())


class Asked:
    """A client's side of ``receive``: the body's parts, counting what was asked for."""

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts
        self.asked = 0

    async def __call__(self) -> dict[str, Any]:
        self.asked += 1
        part = self.parts.pop(0)
        return {"type": "http.request", "body": part, "more_body": bool(self.parts)}


@pytest.mark.parametrize(
    ("parts", "declared", "asked", "entered", "refused"),
    [
        # Declared past the limit: not one part is asked for.
        ([b"x" * 60, b"x" * 60], b"120", 0, b"", True),
        # No length declared: read until past the limit (120 bytes in), then no further.
        ([b"a" * 60, b"b" * 60, b"c" * 60, b"d"], None, 2, b"a" * 60 + b"b" * 60, True),
        # Within the limit: read whole, unmarked.
        ([b"a" * 50, b"b" * 50], b"100", 2, b"a" * 50 + b"b" * 50, False),
    ],
)
def test_a_body_past_the_limit_is_read_no_further(parts, declared, asked, entered, refused):
    async def scenario() -> dict[str, Any]:
        app = BodyReader()
        gate = AdmissionGate(app, limit=1, body_limit=100)
        client = Asked(parts)
        headers = [] if declared is None else [(b"content-length", declared)]
        scope = {"type": "http", "path": "/upload", "headers": headers}
        await gate(scope, client, _send)
        assert client.asked == asked
        assert app.bodies["/upload"] == entered
        return scope

    assert asyncio.run(scenario()).get(BODY_TOO_LARGE) == (100 if refused else None)


@pytest.mark.django_db
@pytest.mark.parametrize("declared", [True, False])
def test_the_served_application_answers_an_oversize_body_413_without_reading_it(settings, declared):
    limit = settings.BODY_MAX_BYTES
    assert limit >= max(settings.JSON_MAX_BYTES, settings.IMPORT_MAX_BYTES)
    part = b"x" * (limit // 2 + 1)  # two parts are past the limit, the third never read

    async def scenario() -> tuple[list[dict[str, Any]], int]:
        scope = http_scope("/api/v1/bids/", method="POST")
        scope["headers"] += [(b"content-type", b"application/json")]
        if declared:
            scope["headers"] += [(b"content-length", str(3 * len(part)).encode())]
        talk = ApplicationCommunicator(application, scope)
        for last in (False, False, True):
            await talk.send_input({"type": "http.request", "body": part, "more_body": not last})
        messages = [await talk.receive_output(10), await talk.receive_output(10)]
        await talk.wait(10)
        return messages, talk.input_queue.qsize()

    (start, body), unread = asyncio.run(scenario())
    assert start["status"] == 413
    headers = {name.lower(): value for name, value in start["headers"]}
    # A declared length lets the server drop the rest and keep the connection; without one
    # there is no end to wait for.
    assert headers.get(b"connection") == (None if declared else b"close")
    assert headers[b"x-content-type-options"] == b"nosniff"  # the middleware before it ran
    assert json.loads(body["body"]) == {
        "error": {"code": "too_large", "message": f"The body is limited to {limit} bytes."}
    }
    assert unread == (3 if declared else 1)


def test_a_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1, not 0"):
        AdmissionGate(Recorder(), limit=0)


def test_the_served_application_puts_http_behind_the_gate(settings):
    http = application.application_mapping["http"]
    assert isinstance(http, AdmissionGate)
    assert http.limit == settings.WEB_IN_FLIGHT


def test_request_threads_share_one_redis_pool_for_the_cache():
    """Django makes a cache object per thread; their Redis pools must be one."""
    pools = []

    def pool_of_this_thread() -> None:
        cache = caches["default"]
        cache.set("admission-test", 1, 5)
        pools.append(cache._cache._get_connection_pool(True))

    for _ in range(3):
        thread = threading.Thread(target=pool_of_this_thread)
        thread.start()
        thread.join()
    assert len(pools) == 3
    assert pools[0] is pools[1] is pools[2]
    assert not isinstance(pools[0], SharedConnectionPool)  # a plain redis-py pool, shared


def test_request_threads_share_one_redis_client_for_the_cache():
    """Django's backend builds a ``redis.Redis`` per operation; ours keeps one per pool, and
    the counters it reads and writes are those every thread sees."""
    clients = []

    def client_of_this_thread(n: int) -> None:
        cache = caches["default"]
        cache.set(f"admission-client-{n}", n, 5)
        clients.append(cache._cache.get_client(write=True))
        clients.append(cache._cache.get_client())

    threads = [threading.Thread(target=client_of_this_thread, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(clients) == 6
    assert all(client is clients[0] for client in clients)
    assert caches["default"].get_many([f"admission-client-{n}" for n in range(3)]) == {
        f"admission-client-{n}": n for n in range(3)
    }


def test_the_middleware_chain_is_synchronous_and_whole():
    """``SyncChainHandler`` (exchange/handler.py) builds every middleware in sync mode, so a
    request's middleware, view and rendering run in one call on one thread."""
    handler = SyncChainHandler(lanes=1)
    assert not asyncio.iscoroutinefunction(handler._middleware_chain)
    modes = [getattr(m, "async_mode", False) for m in _chain_instances(handler)]
    assert len(modes) == len(django_settings.MIDDLEWARE)
    assert not any(modes)


def _chain_instances(handler: SyncChainHandler) -> list[Any]:
    """The middleware instances of ``handler``'s chain, outermost first."""
    found = []
    node: Any = handler._middleware_chain
    while node is not None:
        inner = next(
            (
                c.cell_contents
                for c in (getattr(node, "__closure__", None) or ())
                if callable(c.cell_contents)
            ),
            None,
        )
        if inner is None or inner is handler._get_response:
            break
        if not hasattr(inner, "get_response"):
            break
        found.append(inner)
        node = inner.get_response
    return found


def _get(app: Any, path: str) -> tuple[dict[str, Any], bytes]:
    """GET ``path`` through the ASGI application ``app``: the response's start and body."""
    start, *parts = asgi_get(app, path)
    return start, b"".join(part.get("body", b"") for part in parts)


@pytest.mark.django_db(transaction=True)
def test_a_page_through_the_served_application_keeps_its_middleware_effects():
    """The login page through the real ASGI application: Django's middleware still does its
    work in sync mode (the CSRF cookie, the page's Content-Security-Policy, clickjacking)."""
    start, body = _get(application, "/login/")
    assert start["status"] == 200
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    assert "csrftoken=" in headers["set-cookie"]
    assert headers["x-frame-options"] == "DENY"
    assert "nonce-" in headers["content-security-policy"]
    assert b"<form" in body


@pytest.fixture
def request_threads():
    """The names of the threads that ran each request's start (request_started's sync
    receivers run on the request's thread)."""
    names: list[str] = []

    def record(**kwargs: Any) -> None:
        names.append(threading.current_thread().name)

    request_started.connect(record)
    yield names
    request_started.disconnect(record)


@pytest.mark.django_db(transaction=True)
def test_requests_one_after_another_run_on_the_same_kept_thread(request_threads):
    handler = SyncChainHandler(lanes=2)
    for _ in range(3):
        assert _get(handler, "/login/")[0]["status"] == 200
    assert len(request_threads) == 3
    assert len(set(request_threads)) == 1
    assert request_threads[0].startswith("request-lane-")
    assert len(handler.lanes_free) == 2


@pytest.mark.django_db(transaction=True)
def test_with_every_lane_taken_a_request_gets_a_thread_of_its_own(request_threads):
    handler = SyncChainHandler(lanes=1)
    taken = handler.lanes_free.pop()  # as if a streamed download held it
    assert _get(handler, "/login/")[0]["status"] == 200
    assert len(request_threads) == 1
    assert not request_threads[0].startswith("request-lane-")
    handler.lanes_free.append(taken)
    assert _get(handler, "/login/")[0]["status"] == 200
    assert request_threads[1].startswith("request-lane-")


def test_a_handler_without_lanes_is_refused():
    with pytest.raises(ValueError, match="at least 1 lane, not 0"):
        SyncChainHandler(lanes=0)
