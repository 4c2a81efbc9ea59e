"""The web tier's hand-over of a WebSocket connection (``exchange/server.py``, issue 36), on
real sockets: ``Handoff`` sends the connection's descriptor and the upgrade request's bytes
in one datagram and lets go of the connection, or answers 503 when nobody can take it; and
the process counts of ``exchange/settings/web_tier.py``."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from exchange.server import UNAVAILABLE, handoff_class, parse_args
from exchange.settings.web_tier import SOCKET_WORKERS, WEB_WORKERS, WorkerCountError, worker_count

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
