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
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase


class SyncChainHandler(ASGIHandler):
    """An ``ASGIHandler`` whose middleware chain is synchronous and runs in one thread hop."""

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        # thread_sensitive: the request's own thread, where Django's database connection for
        # this request lives and where the response is closed (request_finished).
        get_response: Any = sync_to_async(self.get_response, thread_sensitive=True)
        response: HttpResponseBase = await get_response(request)
        return response
