"""The door of the web tier: at most ``limit`` HTTP requests of one server process inside
Django at a time; the others wait their turn on the event loop, in arrival order.

Why: under ASGI Django runs each request's synchronous code on a thread of its own, and
hands the request back and forth between that thread and the event loop several times (the
middleware that can run async, the view, the response). With no bound, a burst of 100
requests becomes 100 threads that contend for the GIL and for the process's pool of
database connections: the connection of a request whose view has finished is only given
back once the event loop, now starved, has carried its response out, so most threads wait
for a connection and a 25 ms request took seconds (py-spy during ``ops/bench_live.py`` at
50 bids/s: 83 of 108 threads of a worker waiting in ``ConnectionPool.getconn``). A waiting
request here costs a coroutine, not a thread; requests keep their order; none is refused.

WebSockets and lifespan events pass straight through: a socket lives for hours and takes
no database connection while it idles. The request's body is read whole before the request
enters: a client that sends its body slowly waits outside and keeps nobody else out (two
clients that sent part of a large upload and stopped had held both places of a process,
every other request waiting behind them). A body larger than any the exchange takes
(``body_limit``) is not read at all if its length says so, nor past the limit if it does
not: the request enters with what was read and ``BODY_TOO_LARGE`` in its scope, and is
answered 413 (``exchange.middleware.RefusedBodyMiddleware``) without a view ever reading
it, so no upload fills memory or disk whatever its size. A response sent in several parts
(a history read streamed for minutes, a large page) gives its place up with its first part:
its view has run, and holding the place for the whole transfer would let a few slow
downloads keep everyone else out.
"""

from __future__ import annotations

import asyncio
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]

# The scope's key for a body refused as too large (its value: the limit, in bytes).
BODY_TOO_LARGE = "intersect.body_too_large"
_END: Message = {"type": "http.request", "body": b"", "more_body": False}


def declared_length(scope: Scope) -> int | None:
    """The request's ``Content-Length``, or None without one (or with one that is not a
    number: the HTTP server refuses those before the application sees them)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def read_ahead(receive: Any, scope: Scope, body_limit: int | None = None) -> Any:
    """Read the request's body until it is complete or the client leaves; returns a
    ``receive`` that gives those messages again, then goes on reading from the client.
    Past ``body_limit`` bytes (declared or read) it stops reading, marks the scope with
    ``BODY_TOO_LARGE`` and ends the body with what it has."""
    declared = declared_length(scope)
    if body_limit is not None and declared is not None and declared > body_limit:
        scope[BODY_TOO_LARGE] = body_limit
        replay = [_END]
    else:
        replay = []
        size = 0
        while True:
            message = await receive()
            replay.append(message)
            if message["type"] != "http.request":
                break  # http.disconnect
            size += len(message.get("body", b""))
            if body_limit is not None and size > body_limit:
                scope[BODY_TOO_LARGE] = body_limit
                if message.get("more_body"):
                    replay.append(_END)  # the rest is never read
                break
            if not message.get("more_body"):
                break

    async def receive_again() -> Message:
        if replay:
            return replay.pop(0)
        return await receive()

    return receive_again


class AdmissionGate:
    """Wrap an ASGI application so that at most ``limit`` HTTP requests run in it at once
    per process (each process has its own event loop and its own count)."""

    def __init__(self, app: Any, limit: int, body_limit: int | None = None) -> None:
        if limit < 1:
            raise ValueError(f"the in-flight limit must be at least 1, not {limit}")
        self.app = app
        self.limit = limit
        self.body_limit = body_limit
        self._gate: asyncio.Semaphore | None = None

    def _semaphore(self) -> asyncio.Semaphore:
        # Made on first use, inside the server's running loop.
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.limit)
        return self._gate

    @property
    def in_flight(self) -> int:
        """Requests inside the application now (0 before the first one)."""
        gate = self._gate
        return 0 if gate is None else self.limit - gate._value

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        receive = await read_ahead(receive, scope, self.body_limit)
        gate = self._semaphore()
        await gate.acquire()
        held = True

        async def send_releasing(message: Message) -> None:
            nonlocal held
            await send(message)
            if held and message["type"] == "http.response.body" and message.get("more_body"):
                held = False
                gate.release()

        try:
            await self.app(scope, receive, send_releasing)
        finally:
            if held:
                gate.release()
