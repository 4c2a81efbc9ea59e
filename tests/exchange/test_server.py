"""The web tier's hand-over of a WebSocket connection (``exchange/server.py``, issue 36), on
real sockets: ``Handoff`` sends the connection's descriptor and the upgrade request's bytes
in one datagram and lets go of the connection, or answers 503 when nobody can take it; and
the process counts of ``exchange/settings/web_tier.py``; and whether the socket processes are
alive (``exchange/socket_beats.py``), read from real processes killed for real."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from uvicorn import Config
from uvicorn.protocols.websockets.auto import AutoWebSocketsProtocol
from uvicorn.server import ServerState

from exchange import server
from exchange.collector import THRESHOLDS
from exchange.server import UNAVAILABLE, Handoff, handoff_class, parse_args
from exchange.settings.web_tier import (
    SOCKET_HANDOVER_GRACE,
    SOCKET_WORKERS,
    WEB_WORKERS,
    HandoverGraceError,
    WorkerCountError,
    handover_grace,
    worker_count,
)
from exchange.socket_beats import STALE_SECONDS, SocketBeats, running
from tests.conftest import collector_kept

UPGRADE = b"GET /ws/ HTTP/1.1\r\nhost: 127.0.0.1\r\nupgrade: websocket\r\n\r\n"


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    send_end, receive_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    send_end.setblocking(False)
    yield send_end, receive_end
    send_end.close()
    receive_end.close()


async def _handed(channel: socket.socket, data: bytes) -> socket.socket:
    """A client's connection whose server end is given to ``Handoff`` on ``channel`` with
    ``data`` as uvicorn gives it; returns the client's socket (its sending side shut) once
    this process has closed its descriptor of the server end."""
    loop = asyncio.get_running_loop()
    listening = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listening.getsockname())
    server_end, _ = listening.accept()
    listening.close()
    server_end.setblocking(False)
    handoff = handoff_class(channel)(config=None, server_state=None, app_state=None)
    transport, _ = await loop.connect_accepted_socket(lambda: handoff, server_end)
    handoff.data_received(data)
    for _ in range(100):  # the transport's close runs on later turns of the loop
        if transport.get_extra_info("socket").fileno() == -1:
            break
        await asyncio.sleep(0)
    else:
        raise AssertionError("the handed-over connection's descriptor is still open here")
    client.settimeout(10)
    client.shutdown(socket.SHUT_WR)
    return client


def test_the_connection_and_its_request_go_to_the_socket_processes_in_one_datagram(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    send_end, receive_end = pair
    client = asyncio.run(_handed(send_end, UPGRADE))
    data, fds, _, _ = socket.recv_fds(receive_end, 65536, 4)
    assert data == UPGRADE
    assert len(fds) == 1
    # The descriptor received is the same connection: what is written on it reaches the
    # client, and the client's end of the stream is seen on it.
    with socket.socket(fileno=fds[0]) as taken:
        taken.sendall(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")
        taken.shutdown(socket.SHUT_WR)
        assert client.recv(100) == b"HTTP/1.1 101 Switching Protocols\r\n\r\n"
        assert client.recv(100) == b""
        taken.settimeout(10)
        assert taken.recv(100) == b""
    client.close()


def test_with_no_room_in_the_pair_the_client_gets_a_503_and_nothing_is_handed_over(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    send_end, receive_end = pair
    receive_end.close()  # nobody to take it: the send fails (connection refused)
    client = asyncio.run(_handed(send_end, UPGRADE))
    received = b""
    while chunk := client.recv(4096):
        received += chunk
    assert received == UNAVAILABLE
    assert received.split(b"\r\n\r\n", 1)[1] == b"no socket worker could take it\n"
    client.close()


def test_an_upgrade_request_larger_than_a_datagram_takes_is_answered_503(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    send_end, receive_end = pair
    huge = UPGRADE[:-2] + b"x-padding: " + b"a" * (64 * 1024) + b"\r\n\r\n"
    client = asyncio.run(_handed(send_end, huge))
    received = b""
    while chunk := client.recv(4096):
        received += chunk
    assert received == UNAVAILABLE
    receive_end.setblocking(False)
    with pytest.raises(BlockingIOError):
        receive_end.recv(10)


@pytest.mark.parametrize(
    ("environ", "web", "sockets"),
    [
        ({}, 2, 1),
        ({WEB_WORKERS: "", SOCKET_WORKERS: " "}, 2, 1),
        ({WEB_WORKERS: "3", SOCKET_WORKERS: "0"}, 3, 0),
        ({WEB_WORKERS: "1", SOCKET_WORKERS: "4"}, 1, 4),
    ],
)
def test_the_process_counts_and_their_defaults(
    environ: dict[str, str], web: int, sockets: int
) -> None:
    assert worker_count(WEB_WORKERS, environ) == web
    assert worker_count(SOCKET_WORKERS, environ) == sockets


@pytest.mark.parametrize(
    ("name", "value"),
    [(WEB_WORKERS, "0"), (WEB_WORKERS, "two"), (SOCKET_WORKERS, "-1"), (SOCKET_WORKERS, "1.5")],
)
def test_a_process_count_out_of_range_is_refused(name: str, value: str) -> None:
    with pytest.raises(WorkerCountError, match=f"{name} must be a whole number"):
        worker_count(name, {name: value})


def test_the_server_says_so_and_exits_2_on_a_bad_count(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(SOCKET_WORKERS, "many")
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--port", "8000"])
    assert exit_.value.code == 2
    assert "SOCKET_WORKERS must be a whole number, 0 or more; not 'many'" in capsys.readouterr().err


def test_the_flags_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WEB_WORKERS, "5")
    monkeypatch.setenv(SOCKET_WORKERS, "5")
    args = parse_args(["--web-workers", "1", "--socket-workers", "0"])
    assert (args.web_workers, args.socket_workers) == (1, 0)


def test_a_process_that_fails_at_its_start_stops_the_server_with_an_error() -> None:
    """A broken setting (here a settings module that does not exist) makes the HTTP process
    exit at once: the supervisor says so and exits 1 instead of starting it again forever."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="exchange.settings.no_such_module")
    done = subprocess.run(
        [sys.executable, "-m", "exchange.server", "--port", str(port), "--web-workers", "1"]
        + ["--socket-workers", "0", "--log-level", "warning"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "process web0" in done.stdout
    assert "it did not start, stopping" in done.stdout


# -- whether the socket processes are alive (exchange/socket_beats.py) ----------------------


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A real process standing for a socket process (the test's own child, as the
    supervisor's children are its)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield process
    process.kill()
    process.wait()


def test_a_socket_process_is_alive_while_it_runs_and_beats(child) -> None:
    beats = SocketBeats.create(2, grace=30)
    now = time.time()
    beats.started(0, child.pid, now)
    beats.started(1, child.pid, now)
    # started, no beat yet: not alive (it takes no connection before its first beat)
    assert beats.status(now) == {
        "ok": False,
        "alive": [],
        "down": ["socket0", "socket1"],
        "upgrades": "handed_over",
    }
    beats.beat(0, now)
    beats.beat(1, now - STALE_SECONDS - 1)  # a process whose loop is stuck stops beating
    assert beats.status(now) == {
        "ok": True,
        "alive": ["socket0"],
        "down": ["socket1"],
        "upgrades": "handed_over",
    }
    # killed: down at once, even before its parent reaps it (a zombie)
    child.send_signal(signal.SIGKILL)
    for _ in range(1000):
        if not running(child.pid):
            break
        time.sleep(0.01)
    assert os.path.exists(f"/proc/{child.pid}")  # not reaped yet
    assert beats.status(now)["alive"] == []
    assert beats.status(now)["ok"] is False
    os.close(beats.fd)


def test_new_websockets_are_handed_over_only_while_a_socket_process_is_or_soon_will_be_there(
    child,
) -> None:
    ours = os.getppid()  # this test process's parent stands for the supervisor
    beats = SocketBeats.create(1, grace=30)
    http = SocketBeats(beats.fd, 1, grace=30, supervisor=ours)
    now = time.time()
    beats.started(0, child.pid, now - 100)
    # nothing beat or started within the grace: served here
    assert http.handing_over(now) is False
    # a process just (re)started takes its connections once it runs
    beats.started(0, child.pid, now - 29)
    assert http.handing_over(now) is True
    # one that beat within the grace has died or stuck only just: the supervisor restarts it
    beats.started(0, child.pid, now - 100)
    beats.beat(0, now - 29)
    assert http.handing_over(now) is True
    beats.beat(0, now - 31)
    assert http.handing_over(now) is False
    # without the supervisor (this process's parent is not the one it started under),
    # nobody restarts a socket process: served here
    beats.beat(0, now)
    orphan = SocketBeats(beats.fd, 1, grace=30, supervisor=ours + 1)
    assert orphan.handing_over(now) is False
    assert http.handing_over(now) is True
    os.close(beats.fd)


def _app(scope, receive, send):  # pragma: no cover - never called: the protocol is only made
    raise AssertionError


def test_with_nobody_to_take_it_the_http_process_serves_the_websocket_itself(pair) -> None:
    send_end, _ = pair
    beats = SocketBeats.create(1, grace=30)
    http = SocketBeats(beats.fd, 1, grace=30, supervisor=os.getppid())
    config = Config(_app, ws=handoff_class(send_end, http))
    config.load()
    make = config.ws_protocol_class
    assert make is not None and AutoWebSocketsProtocol is not None

    async def protocols() -> tuple[object, object]:
        # uvicorn makes the protocol on its loop, as the upgrade request arrives
        beats.started(0, os.getpid(), time.time() - 100)
        served_here = make(config=config, server_state=ServerState(), app_state={})
        beats.beat(0)
        return served_here, make(config=config, server_state=ServerState(), app_state={})

    served_here, handed = asyncio.run(protocols())
    assert type(served_here) is AutoWebSocketsProtocol
    assert isinstance(handed, Handoff)
    os.close(beats.fd)


@pytest.mark.parametrize(("raw", "seconds"), [("", 30.0), (" ", 30.0), ("2", 2.0), ("0.5", 0.5)])
def test_the_hand_over_grace_and_its_default(raw: str, seconds: float) -> None:
    assert handover_grace({SOCKET_HANDOVER_GRACE: raw}) == seconds


@pytest.mark.parametrize("raw", ["0", "-1", "soon", "nan", "inf"])
def test_a_hand_over_grace_out_of_range_is_refused(raw: str) -> None:
    with pytest.raises(HandoverGraceError, match="a number of seconds above 0"):
        handover_grace({SOCKET_HANDOVER_GRACE: raw})


def test_the_server_says_so_and_exits_2_on_a_bad_grace(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(SOCKET_HANDOVER_GRACE, "soon")
    with pytest.raises(SystemExit) as exited:
        parse_args([])
    assert exited.value.code == 2
    assert f"{SOCKET_HANDOVER_GRACE} must be a number of seconds above 0; not 'soon'" in (
        capsys.readouterr().err
    )


def test_a_process_loads_the_application_then_freezes_what_it_holds():
    with collector_kept():
        gc.unfreeze()
        kept = object.__new__(type("Kept", (), {}))  # a tracked object alive before the load
        loaded = server.config(parse_args(["--port", "8000"]), "auto")
        assert loaded.loaded and loaded.loaded_app is not None  # the application imported
        assert gc.get_threshold() == THRESHOLDS
        assert not any(o is kept for o in gc.get_objects())  # out of the collector's sight
