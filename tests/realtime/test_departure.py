"""``DepartureGuard``: a send after the client's disconnect is a departure, not a failure."""

from __future__ import annotations

import asyncio

import pytest
from uvicorn.protocols.utils import ClientDisconnected

from exchange.realtime.departure import DepartureGuard


def run(app, scope, incoming):
    """Run ``app`` behind the guard with ``incoming`` as what the client sends; the messages
    that reached the server, and what the app's own sends raised, in order."""
    sent, raised = [], []
    queue = list(incoming)

    async def receive():
        return queue.pop(0)

    async def send(message):
        sent.append(message)

    async def scenario():
        await DepartureGuard(app)(scope, receive, send)

    app.raised = raised
    asyncio.run(scenario())
    return sent, raised


class Echo:
    """Accepts, sends one frame per message received, then once more and a close after the
    disconnect (what a consumer handling a channel-layer message at that moment does)."""

    async def __call__(self, scope, receive, send):
        await send({"type": "websocket.accept"})
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                break
            await send({"type": "websocket.send", "text": message["text"]})
        for late in ({"type": "websocket.send", "text": "late"}, {"type": "websocket.close"}):
            try:
                await send(late)
            except ClientDisconnected:
                self.raised.append(late["type"])


def test_after_the_disconnect_a_send_raises_client_disconnected_and_a_close_is_dropped():
    app = Echo()
    sent, raised = run(
        app,
        {"type": "websocket"},
        [
            {"type": "websocket.receive", "text": "a"},
            {"type": "websocket.receive", "text": "b"},
            {"type": "websocket.disconnect", "code": 1000},
        ],
    )
    assert sent == [
        {"type": "websocket.accept"},
        {"type": "websocket.send", "text": "a"},
        {"type": "websocket.send", "text": "b"},
    ]
    assert raised == ["websocket.send"]


def test_before_the_disconnect_a_close_reaches_the_server():
    async def closing(scope, receive, send):
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": 4000})

    sent, _ = run(closing, {"type": "websocket"}, [])
    assert sent == [{"type": "websocket.accept"}, {"type": "websocket.close", "code": 4000}]


@pytest.mark.parametrize("kind", ["http", "lifespan"])
def test_other_scopes_pass_through_untouched(kind):
    seen = {}

    async def app(scope, receive, send):
        seen["receive"], seen["send"] = receive, send

    async def receive():
        return {}

    async def send(message):
        return None

    asyncio.run(DepartureGuard(app)({"type": kind}, receive, send))
    assert seen == {"receive": receive, "send": send}
