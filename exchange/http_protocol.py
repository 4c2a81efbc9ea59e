"""uvicorn's HTTP protocol (httptools) with a response's status line and headers sent in the
same write as its first body bytes.

Why: uvicorn writes the status line and headers (``http.response.start``) and then each
body message with a ``transport.write`` of their own, so every response cost two sends where
one would do. On loopback each send is a syscall that also runs the receiving side's TCP
path in the sender's context: py-spy ``--gil`` on an HTTP process put
``RequestResponseCycle.send`` at 11% of the own samples of a ``POST /api/v1/bids/`` and 27%
of a 404's. uvicorn has no setting for it.

Held only when the response's length is known (a ``content-length``, or a 204/304 without
a body), so its first body message carries bytes or ends it: Django's responses and uvicorn's
own 500 send it right after the headers. A response of unknown length (chunked: a streamed
read) may be a feed whose first part comes late, and a HEAD has no body write to ride on:
their headers go out at once, as before. Everything after the headers passes straight
through, so the transport's flow control sees the same writes; a close sends held headers
first (an application that fails after its start). A WebSocket upgrade makes no response
cycle, so it never meets this.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle


class HeadersWithBody(asyncio.Transport):
    """The transport as one response's cycle sees it (the cycle writes, closes and asks
    ``is_closing``, nothing else): its headers' write is held for its first body write."""

    def __init__(self, cycle: RequestResponseCycle) -> None:
        super().__init__()
        # Weakly: the cycle holds this as its transport, and a reference cycle would leave
        # every response to the garbage collector instead of freeing it at its end.
        self.cycle = weakref.proxy(cycle)
        self.transport = cycle.transport
        self.headers: bytes | None = None
        self.started = False

    def write(self, data: Any) -> None:
        if self.headers is not None:
            data, self.headers = self.headers + data, None
        elif not self.started and self.cycle.response_started:
            # The status line and headers (a 100 Continue comes before the start).
            self.started = True
            cycle = self.cycle
            if not cycle.chunked_encoding and cycle.scope["method"] != "HEAD":
                self.headers = bytes(data)
                return
        self.transport.write(data)

    def close(self) -> None:
        if self.headers is not None:
            self.transport.write(self.headers)
            self.headers = None
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()


class OneWriteProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol whose responses go out through ``HeadersWithBody``."""

    def on_headers_complete(self) -> None:
        previous = self.cycle
        super().on_headers_complete()
        # A new cycle for a request; none for an upgrade. Its task has not run yet.
        if self.cycle is not previous:
            self.cycle.transport = HeadersWithBody(self.cycle)
