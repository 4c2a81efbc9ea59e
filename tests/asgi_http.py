"""Talking HTTP to an ASGI application in a test, without a server."""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.testing import ApplicationCommunicator


def http_scope(path: str, *, method: str = "GET", query: bytes = b"") -> dict[str, Any]:
    """The scope of a plain HTTP/1.1 request for ``path`` from 127.0.0.1."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }


def asgi_get(app: Any, path: str) -> list[dict[str, Any]]:
    """GET ``path`` through ``app``: every message it sent, up to the last part of the body."""

    async def scenario() -> list[dict[str, Any]]:
        talk = ApplicationCommunicator(app, http_scope(path))
        await talk.send_input({"type": "http.request", "body": b"", "more_body": False})
        messages = [await talk.receive_output(10)]
        while True:
            messages.append(await talk.receive_output(10))
            if not messages[-1].get("more_body"):
                break
        await talk.wait(10)
        return messages

    return asyncio.run(scenario())
