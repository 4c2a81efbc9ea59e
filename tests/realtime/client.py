"""A WebSocket client on the ASGI application in process, shared by the realtime tests."""

from __future__ import annotations

import json

from channels.testing.websocket import WebsocketCommunicator

from exchange.asgi import application

# Seconds a connect, a disconnect or an answer may take before the test fails: generous, for
# a loaded 2-core machine. The communicator's default of 1 s for the handshake and the
# disconnect (each a few Redis round trips and a token lookup) failed a connect under load.
PATIENCE = 10


class Socket(WebsocketCommunicator):
    """A communicator whose ``disconnect`` waits ``PATIENCE`` for the consumer's cleanup."""

    async def disconnect(self, code: int = 1000, timeout: float = PATIENCE) -> None:
        await super().disconnect(code=code, timeout=timeout)

    async def ended(self) -> list[dict]:
        """Wait for the consumer to end on its own; what it sent that was not read, in order."""
        await self.wait(timeout=PATIENCE)
        sent = []
        while not self.output_queue.empty():
            sent.append(self.output_queue.get_nowait())
        return sent


async def connect(path: str = "/ws/", headers=None) -> Socket:
    ws = Socket(application, path, headers=headers or [])
    connected, _ = await ws.connect(timeout=PATIENCE)
    assert connected
    return ws


async def ask(ws: WebsocketCommunicator, frame) -> dict:
    """Send ``frame`` (text as is, anything else as JSON) and return the next frame."""
    await ws.send_to(text_data=frame if isinstance(frame, str) else json.dumps(frame))
    return json.loads(await ws.receive_from(timeout=PATIENCE))
