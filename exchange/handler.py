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
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase


class SyncChainHandler(ASGIHandler):
    """An ``ASGIHandler`` whose middleware chain is synchronous and runs in one thread hop,
    on one of ``lanes`` kept threads."""

    def __init__(self, lanes: int) -> None:
        if lanes < 1:
            raise ValueError(f"a handler needs at least 1 lane, not {lanes}")
        super().__init__()
        self.lanes_free: list[ThreadPoolExecutor] = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"request-lane-{i}")
            for i in range(lanes)
        ]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        if not self.lanes_free:
            async with ThreadSensitiveContext():
                await self.handle(scope, receive, send)
            return
        lane = self.lanes_free.pop()
        try:
            async with ThreadSensitiveContext(executor=lane):
                await self.handle(scope, receive, send)
        finally:
            self.lanes_free.append(lane)

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        # thread_sensitive: the request's own thread, where Django's database connection for
        # this request lives and where the response is closed (request_finished).
        get_response: Any = sync_to_async(self.get_response, thread_sensitive=True)
        response: HttpResponseBase = await get_response(request)
        return response
