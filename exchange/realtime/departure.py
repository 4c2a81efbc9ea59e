"""A WebSocket client that has left is a departure, not a failure, whichever of its
consumer's handlers notices first.

uvicorn marks a connection closed as soon as its receive returns the client's disconnect,
and from then on refuses a send with a bare ``RuntimeError``. A consumer works on one
message at a time, so a channel-layer message that was being handled when the client
left (a ``user.wake`` after a cycle, say) sends into that closed connection before the
disconnect is handled: the consumer logged it as a failure of its own, with two tracebacks
(``WebSocket consumer failed on user.wake``, then ``WebSocket cleanup failed`` for its
error frame), on an ordinary race of a client going away. Through ``DepartureGuard`` such a
send raises uvicorn's ``ClientDisconnected`` instead, which the consumer takes for what it
is (``StreamConsumer.dispatch``), and a close after the departure has nothing to do.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.utils import ClientDisconnected

Message = dict[str, Any]


class DepartureGuard:
    """ASGI middleware for the WebSocket routes: after the client's disconnect has been
    received, a ``websocket.send`` raises ``ClientDisconnected`` and a ``websocket.close``
    is dropped; before it, every message passes as it is."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        gone = False

        async def receiving() -> Message:
            nonlocal gone
            message: Message = await receive()
            if message["type"] == "websocket.disconnect":
                gone = True
            return message

        async def sending(message: Message) -> None:
            if gone:
                if message["type"] == "websocket.close":
                    return
                raise ClientDisconnected()
            await send(message)

        await self.app(scope, receiving, sending)
