"""A WebSocket client on the ASGI application in process, shared by the realtime tests."""

from __future__ import annotations

import json

from channels.testing.websocket import WebsocketCommunicator

from exchange.asgi import application


async def connect(path: str = "/ws/", headers=None) -> WebsocketCommunicator:
    ws = WebsocketCommunicator(application, path, headers=headers or [])
    connected, _ = await ws.connect()
    assert connected
    return ws


async def ask(ws: WebsocketCommunicator, frame) -> dict:
    """Send ``frame`` (text as is, anything else as JSON) and return the next frame."""
    await ws.send_to(text_data=frame if isinstance(frame, str) else json.dumps(frame))
    return json.loads(await ws.receive_from(timeout=5))
