"""The web tier's HTTP protocol (``exchange/http_protocol.py``) driven as uvicorn drives it,
on a transport that records each write: a response of known length goes out in one write,
everything else in the writes uvicorn's own protocol makes, and the bytes are the same."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest
from uvicorn import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from exchange.http_protocol import OneWriteProtocol

CLOSE = "close"
GET = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"
HELLO = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"
CHUNKED = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
LENGTH = (b"content-length", b"5")
UPGRADE = b"GET /ws/ HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n"


class Transport(asyncio.Transport):
    """What the protocol did to the connection, in order: each write's bytes, and CLOSE."""

    def __init__(self) -> None:
        super().__init__()
        self.done: list[bytes | str] = []

    def write(self, data: Any) -> None:
        self.done.append(bytes(data))

    def close(self) -> None:
        self.done.append(CLOSE)

    def is_closing(self) -> bool:
        return CLOSE in self.done

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def set_protocol(self, protocol: Any) -> None:
        pass


def _connection(
    protocol_class: type[HttpToolsProtocol], app: Any, ws: Any = "auto"
) -> tuple[HttpToolsProtocol, Transport, ServerState]:
    """A connection of ``protocol_class`` serving ``app``, made on the running loop."""
    config = Config(app, http=protocol_class, ws=ws, access_log=False, proxy_headers=False)
    config.load()
    state = ServerState()
    transport = Transport()
    protocol = protocol_class(config=config, server_state=state, app_state={})
    protocol.connection_made(transport)
    return protocol, transport, state


async def _served(protocol_class: type[HttpToolsProtocol], app: Any, data: bytes) -> Transport:
    """``data`` given to a connection of ``protocol_class`` serving ``app``, once every
    response it started has run."""
    protocol, transport, state = _connection(protocol_class, app)
    protocol.data_received(data)
    while state.tasks:  # a pipelined request's task starts when the one before ends
        await asyncio.gather(*state.tasks)
    return transport


def _both(app: Any, data: bytes = GET) -> tuple[list[bytes | str], list[bytes | str]]:
    """What uvicorn's protocol and ours did with ``data``."""
    theirs = asyncio.run(_served(HttpToolsProtocol, app, data)).done
    ours = asyncio.run(_served(OneWriteProtocol, app, data)).done
    return theirs, ours


def _joined(done: list[bytes | str]) -> list[bytes | str]:
    """The bytes sent between closes, whatever the writes."""
    out: list[bytes | str] = [b""]
    for step in done:
        if step == CLOSE:
            out += [CLOSE, b""]
        else:
            assert isinstance(step, bytes)
            last = out[-1]
            assert isinstance(last, bytes)
            out[-1] = last + step
    return [step for step in out if step != b""]


def _responding(*bodies: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        start = {"type": "http.response.start", "status": 200}
        start["headers"] = [LENGTH] if headers is None else headers
        await send(start)
        for body in bodies:
            await send({"type": "http.response.body", **body})

    return app


def test_a_response_of_known_length_goes_out_in_one_write() -> None:
    theirs, ours = _both(_responding({"body": b"hello"}))
    assert theirs == [HELLO, b"hello"]
    assert ours == [HELLO + b"hello"]


def test_a_body_in_several_messages_sends_the_headers_with_the_first() -> None:
    app = _responding(
        {"body": b"he", "more_body": True}, {"body": b"ll", "more_body": True}, {"body": b"o"}
    )
    theirs, ours = _both(app)
    assert theirs == [HELLO, b"he", b"ll", b"o"]
    assert ours == [HELLO + b"he", b"ll", b"o"]


def test_a_streamed_response_of_unknown_length_is_written_as_before() -> None:
    """Chunked: the headers go at once, each part in its own write as it comes."""
    app = _responding({"body": b"hello", "more_body": True}, {"body": b""}, headers=[])
    theirs, ours = _both(app)
    assert ours == theirs == [CHUNKED, b"5\r\nhello\r\n", b"0\r\n\r\n"]


def test_the_headers_of_a_streamed_response_are_out_before_its_first_part() -> None:
    """A feed whose first part comes late: the client has the headers meanwhile."""
    transports: list[Transport] = []
    seen: list[list[bytes | str]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await asyncio.sleep(0)
        seen.append(list(transports[0].done))
        await send({"type": "http.response.body", "body": b""})

    async def run() -> None:
        protocol, transport, state = _connection(OneWriteProtocol, app)
        transports.append(transport)
        protocol.data_received(GET)
        await asyncio.gather(*state.tasks)

    asyncio.run(run())
    assert seen == [[CHUNKED]]
    assert transports[0].done == [CHUNKED, b"0\r\n\r\n"]


def test_a_head_response_sends_its_headers() -> None:
    theirs, ours = _both(_responding({"body": b"hello"}), b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n")
    assert ours == theirs == [HELLO]


@pytest.mark.parametrize("status", [204, 304])
def test_a_response_without_a_body_goes_out_in_one_write(status: int) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    theirs, ours = _both(app)
    head = b"HTTP/1.1 %d %s\r\n\r\n" % (status, b"No Content" if status == 204 else b"Not Modified")
    assert theirs == [head, b""]
    assert ours == [head]


def test_pipelined_requests_are_answered_in_order_on_one_kept_connection() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = scope["path"].encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    requests = b"GET /one HTTP/1.1\r\nhost: x\r\n\r\nGET /second HTTP/1.1\r\nhost: x\r\n\r\n"
    theirs, ours = _both(app, requests)
    one = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n/one"
    second = b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n/second"
    assert ours == [one, second]
    assert _joined(theirs) == [one + second]


def test_a_response_that_closes_the_connection_is_sent_then_closes_it() -> None:
    headers = [(b"content-length", b"5"), (b"connection", b"close")]
    theirs, ours = _both(_responding({"body": b"hello"}, headers=headers))
    whole = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello"
    assert ours == [whole, CLOSE]
    assert _joined(theirs) == [whole, CLOSE]


def test_an_application_that_fails_after_its_start_sends_the_headers_then_closes() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [LENGTH]})
        raise RuntimeError("the view failed")

    theirs, ours = _both(app)
    assert ours == theirs == [HELLO, CLOSE]


def test_an_application_that_fails_before_its_start_gets_uvicorns_500_in_one_write() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("the view failed")

    theirs, ours = _both(app)
    error = (
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: 21\r\nconnection: close\r\n\r\nInternal Server Error"
    )
    assert ours == [error, CLOSE]
    assert _joined(theirs) == [error, CLOSE]


def test_a_100_continue_goes_out_before_the_response() -> None:
    post = b"POST / HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 4\r\n\r\nbody"
    theirs, ours = _both(_responding({"body": b"hello"}), post)
    assert ours == [b"HTTP/1.1 100 Continue\r\n\r\n", HELLO + b"hello"]
    assert theirs == [b"HTTP/1.1 100 Continue\r\n\r\n", HELLO, b"hello"]


def test_a_body_that_waits_for_the_transport_to_drain_takes_the_headers_along() -> None:
    """Flow control: while the transport is paused the body waits, as before, and the
    headers with it."""
    protocols: list[HttpToolsProtocol] = []
    transports: list[Transport] = []
    seen: list[list[bytes | str]] = []

    def resume() -> None:
        seen.append(list(transports[0].done))
        protocols[0].resume_writing()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [LENGTH]})
        protocols[0].pause_writing()
        asyncio.get_running_loop().call_soon(resume)
        await send({"type": "http.response.body", "body": b"hello"})

    async def run() -> None:
        protocol, transport, state = _connection(OneWriteProtocol, app)
        protocols.append(protocol)
        transports.append(transport)
        protocol.data_received(GET)
        await asyncio.gather(*state.tasks)

    asyncio.run(run())
    assert seen == [[]]  # nothing went out while paused
    assert transports[0].done == [HELLO + b"hello"]


def test_a_websocket_upgrade_gets_the_connection_itself() -> None:
    """The WebSocket path is uvicorn's: the upgrade makes no response cycle, and the
    WebSocket protocol is given the connection's own transport and the request."""
    made: list[tuple[Any, bytes]] = []

    class WebSocket(asyncio.Protocol):
        def __init__(self, config: Any, server_state: Any, app_state: Any) -> None:
            self.transport: Any = None

        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            made.append((self.transport, data))

    async def app(scope: Any, receive: Any, send: Any) -> None:  # pragma: no cover
        raise AssertionError("an upgrade is not an HTTP request")

    async def run() -> Transport:
        protocol, transport, _ = _connection(OneWriteProtocol, app, ws=WebSocket)
        protocol.data_received(UPGRADE)
        assert protocol.cycle is None
        return transport

    transport = asyncio.run(run())
    assert made == [(transport, UPGRADE)]
    assert transport.done == []


def test_a_response_is_freed_at_its_end_without_the_garbage_collector() -> None:
    """As under uvicorn's protocol: the cycle and its wrapped transport make no reference
    cycle, so a kept connection's finished responses never wait for a collection."""
    finished: list[weakref.ref[Any]] = []

    async def run() -> None:
        protocol, _, state = _connection(OneWriteProtocol, _responding({"body": b"hello"}))
        protocol.data_received(GET)
        await asyncio.gather(*state.tasks)
        finished.append(weakref.ref(protocol.cycle))
        protocol.data_received(GET)  # the next request takes the connection's cycle
        await asyncio.gather(*state.tasks)
        await asyncio.sleep(0)  # the task's done callbacks

    enabled = gc.isenabled()
    gc.disable()
    try:
        asyncio.run(run())
        assert finished[0]() is None
    finally:
        if enabled:
            gc.enable()
