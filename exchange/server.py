"""The web tier's processes on one address: HTTP workers and socket workers (issue 36).

    python -m exchange.server --host 127.0.0.1 --port 8000 [--web-workers N] [--socket-workers M]
                              [--log-level info] [--no-access-log] <uvicorn's proxy flags>

Why: a uvicorn process that serves both carries every socket's frames on the event loop whose
GIL its request threads hold, so a ``best_offer`` frame waits behind the requests of that
process (``docs/benchmarks.md``, *The socket tier*). Here the supervisor (this module's
``main``) binds the address once and starts ``WEB_WORKERS`` HTTP processes that accept on it
(uvicorn, as ``uvicorn --workers``) and ``SOCKET_WORKERS`` socket processes that never
accept: an HTTP process that parses a WebSocket upgrade request (any path; the product's one
endpoint is ``/ws/``) hands the connection over at once, the socket's file descriptor and
the request's bytes in one datagram (``socket.send_fds``) on a Unix datagram pair that the
supervisor made, and forgets it. A socket process takes the datagram, makes the connection
its own (``loop.connect_accepted_socket``) and feeds uvicorn's HTTP protocol the request's
bytes, so the handshake, origin check, authentication and the consumer run there as they did
before (issue 36 item 5). No HTTP request pays anything for this: the HTTP processes run uvicorn's protocol
and only its WebSocket class differs (``Handoff``); the cost is one datagram per WebSocket
connection. (The HTTP protocol of every process sends a response's headers with its body,
in one write: ``exchange/http_protocol.py``.)

Whichever socket process wakes first takes a connection. A datagram waits in the pair while no
socket process reads (starting, or one just died and is being restarted), so nothing is lost;
if the pair's queue is full, the client gets a 503. Each socket process beats into a file the
supervisor shares with every process (``exchange/socket_beats.py``): ``/healthz`` reports
whether one is alive, and an HTTP process serves a WebSocket itself when no socket process
beat or was started within ``SOCKET_HANDOVER_GRACE_SECONDS``, or the supervisor is gone. The supervisor restarts a process that
exits; SIGTERM or SIGINT stops them all (uvicorn's graceful shutdown in each). With
``SOCKET_WORKERS=0`` the HTTP processes serve the sockets themselves, as before (on the 2-core
Xeon at load 3-4 a socket process halved the push stage's p99; at load 12-20 it did not help:
``docs/benchmarks.md``, *The socket tier*).
Plain TCP only: a TLS connection cannot change process (TLS ends at the proxy in front).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from exchange import socket_beats
from exchange.collector import collector_settle
from exchange.settings.web_tier import (
    SOCKET_WORKERS,
    WEB_WORKERS,
    HandoverGraceError,
    WorkerCountError,
    handover_grace,
    worker_count,
)
from exchange.socket_beats import SocketBeats

log = logging.getLogger("exchange.server")

APPLICATION = "exchange.asgi:application"
# By name: uvicorn imports it in the processes, never in the supervisor.
HTTP_PROTOCOL = "exchange.http_protocol:OneWriteProtocol"
WEB = "web"
SOCKET = "socket"
# The request of an upgrade and its headers, in one datagram (uvicorn's HTTP parsers take
# headers of about this size at most).
MAX_HANDOFF_BYTES = 64 * 1024
UNAVAILABLE = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
    b"content-length: 31\r\nconnection: close\r\n\r\nno socket worker could take it\n"
)
# How long the supervisor gives its processes to stop after SIGTERM before it kills them.
STOP_SECONDS = 20
# A process that exits with an error sooner than this after its start did not start (a broken
# setting or import): the supervisor stops everything and exits instead of starting it again
# forever. One killed by a signal is started again at once.
START_SECONDS = 5


class Handoff(asyncio.Protocol):
    """uvicorn's WebSocket protocol class in an HTTP process: given the upgraded connection and
    its request's bytes (``handle_websocket_upgrade``), it sends both to the socket processes
    and closes this process's copy of the connection (a close, not a shutdown: the
    connection lives on in the socket process). ``channel`` is the sending end of the pair."""

    channel: socket.socket
    beats: SocketBeats | None = None

    def __new__(cls, config: Any, server_state: Any, app_state: Any, _loop: Any = None) -> Any:
        # No socket process alive, being started or about to be (``socket_beats``): the
        # connection is served here, by uvicorn's own WebSocket protocol, rather than queued
        # in the pair where nobody may ever take it.
        if cls.beats is not None and not cls.beats.handing_over():
            from uvicorn.protocols.websockets.auto import (
                AutoWebSocketsProtocol,
            )  # the processes' import

            assert AutoWebSocketsProtocol is not None  # websockets is a dependency
            log.warning("no socket worker is alive: this HTTP process serves the WebSocket")
            return AutoWebSocketsProtocol(
                config=config, server_state=server_state, app_state=app_state
            )
        return super().__new__(cls)

    def __init__(self, config: Any, server_state: Any, app_state: Any, _loop: Any = None) -> None:
        self.transport: Any = None  # uvloop's or asyncio's

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        # What the client sends next is the socket process's to read.
        transport.pause_reading()

    def data_received(self, data: bytes) -> None:
        transport = self.transport
        assert transport is not None
        connection = transport.get_extra_info("socket")
        try:
            if len(data) > MAX_HANDOFF_BYTES:
                raise OSError(f"an upgrade request of {len(data)} bytes")
            socket.send_fds(self.channel, [data], [connection.fileno()])
        except OSError as exc:  # the pair is full (BlockingIOError) or the request too large
            log.warning("a WebSocket connection could not be handed over: %s", exc)
            transport.write(UNAVAILABLE)
            transport.close()
            return
        transport.abort()  # closes this process's descriptor only; nothing is sent


def handoff_class(channel: socket.socket, beats: SocketBeats | None = None) -> type[Handoff]:
    """``Handoff`` sending on ``channel``; with ``beats``, only while a socket process is
    there to take it (else the HTTP process serves the WebSocket itself)."""
    return type("Handoff", (Handoff,), {"channel": channel, "beats": beats})


def socket_server(
    config: Any, channel: socket.socket, beats: SocketBeats | None = None, slot: int = 0
) -> Any:
    """A uvicorn server that takes its connections from ``channel`` (the receiving end of
    the pair) instead of accepting them. Imported here: uvicorn's server module is only
    needed by the processes, not the supervisor."""
    from uvicorn.server import Server  # the processes' import, not the supervisor's

    handing: set[asyncio.Task[Any]] = set()

    class SocketServer(Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await self.lifespan.startup()
            if self.lifespan.should_exit:
                self.should_exit = True
                return
            self.servers = []
            channel.setblocking(False)
            asyncio.get_running_loop().add_reader(channel.fileno(), self.take)
            log.info("socket worker %d takes the WebSocket connections", os.getpid())
            self.started = True
            self.beaten = 0.0
            self.beat()

        def beat(self) -> None:
            """This process takes connections (``socket_beats``), said every second."""
            now = time.time()
            if beats is not None and now - self.beaten >= socket_beats.BEAT_SECONDS:
                beats.beat(slot, now)
                self.beaten = now

        async def on_tick(self, counter: int) -> bool:
            # uvicorn's main loop calls it every tenth of a second.
            self.beat()
            return await super().on_tick(counter)

        def take(self) -> None:
            """Every connection waiting in the pair, each made this process's own."""
            loop = asyncio.get_running_loop()
            while True:
                try:
                    data, fds, _, _ = socket.recv_fds(channel, MAX_HANDOFF_BYTES, 4)
                except (BlockingIOError, InterruptedError):
                    return
                if len(fds) != 1:  # not a datagram of ours: close whatever came with it
                    for fd in fds:
                        os.close(fd)
                    continue
                connection = socket.socket(fileno=fds[0])
                connection.setblocking(False)
                task = loop.create_task(
                    loop.connect_accepted_socket(functools.partial(self.protocol, data), connection)
                )
                # A reference until the transport is made (the loop keeps only a weak one).
                handing.add(task)
                task.add_done_callback(handing.discard)

        def protocol(self, data: bytes) -> asyncio.Protocol:
            """uvicorn's HTTP protocol for a handed-over connection, fed the upgrade request
            as soon as it has the transport (before the transport's first read)."""
            protocol_class: Any = self.config.http_protocol_class
            protocol: asyncio.Protocol = protocol_class(
                config=self.config,
                server_state=self.server_state,
                app_state=self.lifespan.state,
            )
            made = protocol.connection_made

            def connection_made(transport: asyncio.BaseTransport) -> None:
                made(transport)
                protocol.data_received(data)

            protocol.connection_made = connection_made  # type: ignore[method-assign]
            return protocol

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            asyncio.get_running_loop().remove_reader(channel.fileno())
            await super().shutdown(sockets)

    return SocketServer(config)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="the web tier: HTTP and socket processes")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--web-workers", type=int, help=f"default: {WEB_WORKERS} (2)")
    parser.add_argument("--socket-workers", type=int, help=f"default: {SOCKET_WORKERS} (1)")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--no-access-log", action="store_true")
    parser.add_argument("--proxy-headers", dest="proxy_headers", action="store_true")
    parser.add_argument("--no-proxy-headers", dest="proxy_headers", action="store_false")
    parser.add_argument("--forwarded-allow-ips", default="")
    # The processes' own arguments, given by the supervisor.
    parser.add_argument("--role", choices=[WEB, SOCKET], help=argparse.SUPPRESS)
    parser.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--handoff-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--beats-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--slot", type=int, default=0, help=argparse.SUPPRESS)
    parser.set_defaults(proxy_headers=False)
    args = parser.parse_args(argv)
    try:
        if args.web_workers is None:
            args.web_workers = worker_count(WEB_WORKERS)
        if args.socket_workers is None:
            args.socket_workers = worker_count(SOCKET_WORKERS)
        args.handover_grace = handover_grace()
    except (WorkerCountError, HandoverGraceError) as exc:
        parser.error(str(exc))
    if args.web_workers < 1 or args.socket_workers < 0:
        parser.error("--web-workers is 1 or more, --socket-workers 0 or more")
    return args


# What the WebSocket protocol reads of one message before the consumer sees it. Its own
# limit is MAX_FRAME_BYTES (4,096 bytes, exchange/realtime/consumers.py), past which it
# answers ``too_large``; 4,096 characters are at most four times that in UTF-8, so every
# frame the consumer could answer so still reaches it, and anything larger is refused by
# the protocol (a close with 1009) before it is read whole. uvicorn's default was 16 MiB,
# after decompression: a 16 KiB compressed frame cost 40 ms of CPU and 16 MiB of memory to
# inflate, and 32 of them could wait in a connection's queue (``WS_MAX_QUEUE``, 32 by
# default) while its consumer was blocked on a client that did not read.
WS_MAX_BYTES = 4 * 4096
WS_MAX_QUEUE = 4


def config(args: argparse.Namespace, ws: Any) -> Any:
    """The uvicorn configuration of a process, ``ws`` its WebSocket protocol (the HTTP one
    sends a response in one write: ``HTTP_PROTOCOL``), loaded: the application imported
    (Django set up, its URLs and models), and what the process holds
    then frozen out of the garbage collector's walks (``collector_settle``). Without it, a
    full collection in an HTTP process under 50 bids/s walked everything the process had
    imported: 270 and 600 ms, once in 30 s in each of the two (``gc.callbacks`` in the
    processes of ``ops/bench_live.py``, a loaded machine), every request of the process
    held meanwhile."""
    from uvicorn import Config  # the processes' import, not the supervisor's

    loaded = Config(
        APPLICATION,
        http=HTTP_PROTOCOL,
        ws=ws,
        ws_max_size=WS_MAX_BYTES,
        ws_max_queue=WS_MAX_QUEUE,
        log_level=args.log_level,
        access_log=not args.no_access_log,
        proxy_headers=args.proxy_headers,
        forwarded_allow_ips=args.forwarded_allow_ips or None,
    )
    loaded.load()
    collector_settle()
    return loaded


def serve(args: argparse.Namespace) -> None:
    """One process of the tier, with the descriptors the supervisor gave it."""
    handoff = socket.socket(fileno=args.handoff_fd) if args.handoff_fd is not None else None
    beats = None
    if args.beats_fd is not None:
        # The HTTP processes' parent is the supervisor: while it runs, it restarts a socket
        # process that dies.
        beats = SocketBeats(
            args.beats_fd, args.socket_workers, grace=args.handover_grace, supervisor=os.getppid()
        )
    if args.role == SOCKET:
        assert handoff is not None
        socket_server(config(args, "auto"), handoff, beats, args.slot).run()
        return
    from uvicorn.server import Server  # the processes' import, not the supervisor's

    listening = socket.socket(fileno=args.listen_fd)
    ws: Any = handoff_class(handoff, beats) if handoff is not None else "auto"
    socket_beats.attach(beats)  # for /healthz, in this process's Django
    Server(config(args, ws)).run(sockets=[listening])


class Supervisor:
    """The processes of the tier, restarted when one exits, stopped together."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.listening = socket.create_server(
            (args.host, args.port), backlog=2048, reuse_port=False
        )
        self.listening.set_inheritable(True)
        self.send_end: socket.socket | None = None
        self.receive_end: socket.socket | None = None
        if args.socket_workers:
            self.send_end, self.receive_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.send_end.setblocking(False)  # a full pair answers 503, never blocks a loop
            for end in (self.send_end, self.receive_end):
                end.set_inheritable(True)
        self.beats = (
            SocketBeats.create(args.socket_workers, grace=args.handover_grace)
            if args.socket_workers
            else None
        )
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.started: dict[str, float] = {}
        self.stopping = False

    def argv(self, role: str) -> tuple[list[str], tuple[int, ...]]:
        a = self.args
        argv = [sys.executable, "-m", "exchange.server", "--role", role]
        argv += ["--log-level", a.log_level]
        argv += ["--proxy-headers" if a.proxy_headers else "--no-proxy-headers"]
        if a.forwarded_allow_ips:
            argv += ["--forwarded-allow-ips", a.forwarded_allow_ips]
        if a.no_access_log:
            argv += ["--no-access-log"]
        argv += ["--web-workers", str(a.web_workers), "--socket-workers", str(a.socket_workers)]
        fds: tuple[int, ...] = ()
        if self.beats is not None:
            argv += ["--beats-fd", str(self.beats.fd)]
            fds += (self.beats.fd,)
        if role == WEB:
            argv += ["--listen-fd", str(self.listening.fileno())]
            fds += (self.listening.fileno(),)
            if self.send_end is not None:
                argv += ["--handoff-fd", str(self.send_end.fileno())]
                fds += (self.send_end.fileno(),)
        else:
            assert self.receive_end is not None
            argv += ["--handoff-fd", str(self.receive_end.fileno())]
            fds += (self.receive_end.fileno(),)
        return argv, fds

    def start(self, name: str) -> None:
        role = name.rstrip("0123456789")
        argv, fds = self.argv(role)
        if role == SOCKET:
            argv += ["--slot", name[len(role) :]]
        self.processes[name] = subprocess.Popen(argv, pass_fds=fds)
        self.started[name] = time.monotonic()
        if role == SOCKET and self.beats is not None:
            self.beats.started(int(name[len(role) :]), self.processes[name].pid)

    def run(self) -> int:
        names = [f"{WEB}{i}" for i in range(self.args.web_workers)]
        names += [f"{SOCKET}{i}" for i in range(self.args.socket_workers)]
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.stop)
        print(
            f"exchange.server {os.getpid()}: http://{self.args.host}:{self.args.port}/ with"
            f" {self.args.web_workers} HTTP and {self.args.socket_workers} socket processes",
            flush=True,
        )
        for name in names:
            self.start(name)
        while not self.stopping:
            for name, process in list(self.processes.items()):
                if process.poll() is None or self.stopping:
                    continue
                # Killed by a signal: started again, however soon (someone killed it).
                early = process.returncode > 0 and (
                    time.monotonic() - self.started[name] < START_SECONDS
                )
                print(
                    f"exchange.server: process {name} ({process.pid}) exited with"
                    f" {process.returncode}"
                    + ("; it did not start, stopping" if early else "; starting it again"),
                    flush=True,
                )
                if early:
                    self.stop(signal.SIGTERM, None)
                    self.wait()
                    return 1
                self.start(name)
            time.sleep(0.5)
        return self.wait()

    def stop(self, signum: int, _frame: Any) -> None:
        self.stopping = True
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)

    def wait(self) -> int:
        deadline = time.monotonic() + STOP_SECONDS
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.role:
        serve(args)
        return 0
    return Supervisor(args).run()


if __name__ == "__main__":
    sys.exit(main())
