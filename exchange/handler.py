"""Django's ASGI handler with the request's synchronous work done in one trip to a thread.

Django's own ASGI handler builds its middleware chain in async mode. Every middleware
written the classic way (``MiddlewareMixin``: sessions, CSRF, auth, messages, ...) then
crosses from the event loop to a thread and back for its ``process_request`` and again for
its ``process_response``, and a sync-only middleware (WhiteNoise, ours) makes the chain
cross once more. With every view of this project synchronous, a request went back and forth
about a dozen times; py-spy with ``--gil`` on a uvicorn worker taking bids showed some 40% of
its CPU in that machinery (``threading``, ``asgiref``, ``asyncio`` futures, the executor).

``SyncChainHandler`` builds the chain in sync mode, as under WSGI, and runs the whole of it
(middleware, view, template rendering) in one call on the request's thread. Reading the
body, sending the response (streamed responses included) and the request signals stay as
Django does them.

It also keeps the request threads. Django gives every request a new one-thread executor
and, when the request ends, starts yet another thread to join it; under load the event loop
spent much of its time in those ``Thread.start`` calls, waiting for the GIL (py-spy dumps of
a uvicorn worker at 50 bids/s: 5 of 12 samples of the loop thread in
``ThreadSensitiveContext.__aexit__``, and 36 idle executor threads). Here a request takes one
of ``lanes`` long-lived one-thread executors (asgiref's ``ThreadSensitiveContext(executor=)``)
and gives it back at its end; with none free (more requests in flight than lanes, as when
streamed downloads hold theirs), it gets a thread of its own as under Django. A lane serves
one request at a time, so what Django keeps per thread (the database connection, given back
to the pool at the end of each request) is never shared by two requests at once.

And a request crosses to its thread once, not three times. Django's ``handle`` sends
``request_started`` from the event loop (its receivers are sync, so that is a trip to the
thread), then runs the chain (a second trip), sends the response from the loop, and closes
it (``request_finished``: a third trip); it also starts a task per request that waits for
the client to leave, which can only stop an async view (a sync one runs to its end anyway).
Here the request's one trip sends ``request_started``, builds the request, runs the chain,
encodes the headers and closes a response that is not streamed (``request_finished``: the
database connection goes back to the pool before the response goes out, not after); the loop
only sends the bytes. py-spy ``--gil`` on ``ops/bench_live.py --request-costs``: the event
loop's share of a ``POST /api/v1/bids/`` was 64% of the process's samples (issue 36). A
streamed response is sent and closed as Django does; it stops early when its client leaves
(as under Django) or takes nothing for ``STREAM_STALL_SECONDS`` (``_send_streamed``).

The trip itself is a plain ``run_in_executor`` on the lane, in a copy of the request's
context, with the one thing asgiref's ``sync_to_async`` sets up on the thread that the
request's code uses (the server's loop, for ``async_to_sync``'s channel-layer sends): py-spy
``--gil`` on ``--request-costs`` put ``SyncToAsync.__call__``, ``ThreadSensitiveContext``'s
entry and exit and ``_restore_context`` (its executor lookup, shield, and copying every
context variable to the thread and back) at about a fifth of a bid's samples and more of a
404's. A body that came whole in one message (``AdmissionGate`` reads ahead) is read into
memory rather than Django's spooled temporary file.

A lane is one thread of its own (``Lane``) rather than a one-thread ``ThreadPoolExecutor``:
the trip puts the call on the lane's queue and the lane settles the request's asyncio
future on the loop with one ``call_soon_threadsafe``. Through ``run_in_executor`` each trip
also made a ``concurrent.futures.Future``, wrapped it in an asyncio one and chained the two
(``_chain_future``, ``_copy_future_state``, ``Future.done``): about a tenth of a
``POST /api/v1/bids/``'s samples on the loop (py-spy ``--gil``, issue 36). A lane is still
an ``Executor`` for what asgiref runs on it (a streamed response's parts and close).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import logging
import os
import queue
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor, Future
from contextlib import aclosing, asynccontextmanager
from typing import IO, Any, TypeVar

from asgiref.sync import SyncToAsync, ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import FileResponse, HttpRequest, HttpResponseBase
from django.urls import set_script_prefix

Headers = list[tuple[bytes, bytes]]
log = logging.getLogger(__name__)
_T = TypeVar("_T")


class SyncChainHandler(ASGIHandler):
    """An ``ASGIHandler`` whose middleware chain is synchronous and runs in one thread hop,
    on one of ``lanes`` kept threads."""

    def __init__(self, lanes: int) -> None:
        if lanes < 1:
            raise ValueError(f"a handler needs at least 1 lane, not {lanes}")
        super().__init__()
        self.lanes_free: list[Lane] = [Lane(f"request-lane-{i}") for i in range(lanes)]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        if not self.lanes_free:
            async with ThreadSensitiveContext():
                await self.handle(scope, receive, send)
            return
        lane = self.lanes_free.pop()
        try:
            await self.handle(scope, receive, send, lane)
        finally:
            self.lanes_free.append(lane)

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def handle(
        self, scope: dict[str, Any], receive: Any, send: Any, lane: Lane | None = None
    ) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            if lane is None:
                set_script_prefix(get_script_prefix(scope))
                # thread_sensitive: the request's thread (see get_response_async).
                serve: Any = sync_to_async(self._serve, thread_sensitive=True)
                response, status, headers, content = await serve(scope, body_file)
            else:
                response, status, headers, content = await _on_lane(
                    lane, self._serve_prefixed, scope, body_file
                )
        finally:
            body_file.close()
        start = {"type": "http.response.start", "status": status, "headers": headers}
        if response is None:
            await send(start)
            for chunk, last in self.chunk_bytes(content):
                await send({"type": "http.response.body", "body": chunk, "more_body": not last})
            return
        # A streamed response's parts (a sync iterator's included) and its close run on the
        # request's lane, as under Django's ThreadSensitiveContext; it is closed whatever
        # happens to its sending, its start's included.
        async with ThreadSensitiveContext(executor=lane) if lane else _nothing():
            try:
                await send(start)
                await self._send_streamed(response, receive, send)
            finally:
                await sync_to_async(response.close)()

    async def read_body(self, receive: Any) -> IO[bytes]:
        """The request's body: Django's spooled file, or for a body that came whole in its
        first message (every order and query: ``AdmissionGate`` reads ahead), that message's
        bytes in memory."""
        message = await receive()
        if message["type"] == "http.request" and not message.get("more_body", False):
            return io.BytesIO(message.get("body", b""))
        first = [message]

        async def receive_again() -> dict[str, Any]:
            return first.pop() if first else await receive()

        body: IO[bytes] = await super().read_body(receive_again)
        return body

    def _serve_prefixed(
        self, scope: dict[str, Any], body_file: IO[bytes]
    ) -> tuple[HttpResponseBase | None, int, Headers, bytes]:
        # asgiref's Local (the script prefix's) shows a thread only what that thread set.
        set_script_prefix(get_script_prefix(scope))
        return self._serve(scope, body_file)

    def _serve(
        self, scope: dict[str, Any], body_file: IO[bytes]
    ) -> tuple[HttpResponseBase | None, int, Headers, bytes]:
        """On the request's thread: the request's start, its response, and, unless that is
        streamed, its end. Returns the streamed response (else None), the status, the
        headers and the content."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__  # type: ignore[attr-defined]  # Django's handlers set it too
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        assert response is not None
        headers = _headers(response)
        if response.streaming:
            return response, response.status_code, headers, b""
        content = response.content  # type: ignore[attr-defined]  # not streaming: an HttpResponse
        response.close()
        return None, response.status_code, headers, content

    async def _send_streamed(self, response: HttpResponseBase, receive: Any, send: Any) -> None:
        """A streamed response's body, as Django's ``send_response`` sends it, until its
        client leaves or stops reading; then it stops, unfinished, and the caller closes it.

        Why: a streamed export holds a database connection, and between its pages a
        transaction, until it is closed (``exchange/api/events.py``). uvicorn makes a send
        after the client left return at once, so without the first check the read would go
        on to its end for nobody; and a send waits while the client takes no bytes, so
        without ``STREAM_STALL_SECONDS`` a client that stopped reading (or never began) kept
        its connection and transaction for as long as it stayed connected. Django's own
        handler stops on a departure too (``listen_for_disconnect``)."""
        streamed: Any = response
        left = asyncio.ensure_future(_departure(receive))
        stall = settings.STREAM_STALL_SECONDS
        try:
            async with aclosing(aiter(streamed)) as content:
                async for part in content:
                    for chunk, _ in self.chunk_bytes(part):
                        body = {"type": "http.response.body", "body": chunk, "more_body": True}
                        if left.done() or not await _sent(send, body, stall):
                            return
            await _sent(send, {"type": "http.response.body"}, stall)
        finally:
            left.cancel()

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        # thread_sensitive: the request's own thread, where Django's database connection for
        # this request lives and where the response is closed (request_finished).
        get_response: Any = sync_to_async(self.get_response, thread_sensitive=True)
        response: HttpResponseBase = await get_response(request)
        return response


class Lane(Executor):
    """One long-lived thread that runs what it is given, one thing at a time, in order: a
    request's trip (``call``, settled on the caller's loop) or, as an ``Executor``, what
    asgiref submits (``submit``)."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        # A daemon: an idle lane does not hold the process at exit (the server has let its
        # requests finish by then).
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def call(self, fn: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """``fn(*args)`` on the lane; its result (or exception) settles the returned future
        on the running loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        self._jobs.put((loop, future, fn, args))
        return future

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> Future[_T]:
        future: Future[_T] = Future()
        self._jobs.put((None, future, lambda: fn(*args, **kwargs), ()))
        return future

    def _run(self) -> None:
        while True:
            self._one(*self._jobs.get())

    @staticmethod
    def _one(loop: Any, future: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        # A call of its own, so that nothing of the job (the response, say) outlives it.
        if loop is None:  # submitted: a concurrent future
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:
                    future.set_exception(exc)
            return
        result: Any = None
        error: BaseException | None = None
        try:
            result = fn(*args)
        except BaseException as exc:
            error = exc
        # RuntimeError: the loop has closed (the server stopped), so nobody waits.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    if future.cancelled():  # the request's task was cancelled while the lane ran
        return
    if exc is None:
        future.set_result(result)
    else:
        future.set_exception(exc)


async def _on_lane(lane: Lane, fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` on ``lane``'s thread in a copy of the caller's context, with what
    asgiref's ``sync_to_async`` sets up there for ``async_to_sync`` (the server's loop, so that
    channel-layer sends from the request go out on it) and nothing else: no executor lookup,
    no shield and no copying of the context back (the handler takes everything it needs
    from ``fn``'s result)."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    return await lane.call(context.run, _lane_call, loop, fn, args)


def _lane_call(loop: asyncio.AbstractEventLoop, fn: Callable[..., _T], args: tuple[Any, ...]) -> _T:
    threadlocal = SyncToAsync.threadlocal
    threadlocal.main_event_loop = loop
    threadlocal.main_event_loop_pid = os.getpid()
    threadlocal.task_context = []
    return fn(*args)


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield


async def _departure(receive: Any) -> None:
    """Returns when the client has left (after the request's body, ``receive`` gives
    nothing else that matters)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _sent(send: Any, message: dict[str, Any], stall: float) -> bool:
    """Whether ``message`` went out within ``stall`` seconds; a client that took nothing
    for that long is given up on."""
    try:
        async with asyncio.timeout(stall):
            await send(message)
    except TimeoutError:
        log.warning("a streamed response's client took nothing for %s s: it is ended", stall)
        return False
    return True


def _headers(response: HttpResponseBase) -> Headers:
    """The response's headers and cookies as ASGI wants them (Django's ``send_response``)."""
    out = []
    for header, value in response.items():
        name = header.encode("ascii") if isinstance(header, str) else header
        raw = value.encode("latin1") if isinstance(value, str) else value
        out.append((bytes(name), bytes(raw)))
    for cookie in response.cookies.values():
        out.append((b"Set-Cookie", cookie.output(header="").encode("ascii").strip()))
    return out
