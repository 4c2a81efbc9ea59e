"""The product's processes started the way ``ops/run`` starts them: the web tier
(``exchange/server.py``: uvicorn's HTTP processes and the socket processes on one address), the
Celery workers (the matching worker and the one for other tasks) and beat, each in its own
process group with its log file.

Shared by the stack and browser tests (``tests/livestack.py``, against the test database) and
the live benchmark (``ops/benchmarks/live``, against its own database): the caller gives the
environment the processes run in, so this module imports no settings (only the plain
``exchange.settings.proxies``, which derives uvicorn's proxy flags from that environment).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from exchange.settings.proxies import NAME as PROXIES_VARIABLE
from exchange.settings.proxies import trusted_proxies, uvicorn_args
from exchange.settings.web_tier import SOCKET_WORKERS, worker_count

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        """SIGTERM the process group; SIGKILL it if it has not exited 20 s later."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL the process and everything it started (its own process group)."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)

    def children(self, role: str) -> list[int]:
        """The pids of this process's children of ``role`` in the web tier (``exchange/
        server.py``'s ``web`` or ``socket`` processes), in the order they were started."""
        with open(f"/proc/{self.pid}/task/{self.pid}/children") as f:
            pids = [int(p) for p in f.read().split()]
        out = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except FileNotFoundError:
                continue  # exited meanwhile
            if b"--role" in argv and argv[argv.index(b"--role") + 1] == role.encode():
                out.append(pid)
        return out

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


def matching_split(workers: int, partitions: int) -> list[str]:
    """The ``--partitions`` of each of ``workers`` matching workers over ``partitions``
    partitions: worker ``i`` takes partitions ``i``, ``i + workers``, ... (one worker: all,
    ``""``). More workers than partitions is refused: the others would have none."""
    if workers < 1 or (workers > 1 and workers > partitions):
        raise ValueError(
            f"{workers} matching workers need MATCHING_PARTITIONS of {workers} or more"
            f" (it is {partitions})"
        )
    if workers == 1:
        return [""]
    return [",".join(str(p) for p in range(i, partitions, workers)) for i in range(workers)]


# The process name of each worker role in ``Stack.processes``.
WORKER_PROCESS = {"tasks": "worker", "matching": "matching", "all": "worker"}


@dataclass
class Stack:
    """The processes of one stack; ``env`` is the environment every one of them runs in."""

    env: dict[str, str]
    log_dir: Path
    log_level: str = "INFO"
    port: int = 0
    processes: dict[str, Process] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/"

    def spawn(self, name: str, argv: list[str], *, append: bool = True) -> Process:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        with log.open("a" if append else "w") as handle:
            popen = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=self.env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, so a kill reaches its children
            )
        process = Process(name, popen, log)
        self.processes[name] = process
        return process

    def start_server(
        self,
        *,
        port: int | None = None,
        workers: int = 1,
        socket_workers: int | None = None,
        ready_path: str = "/",
        ready_seconds: float = 60,
    ) -> Process:
        """The web tier (``exchange/server.py``) on 127.0.0.1 (a free port unless given):
        ``workers`` HTTP processes and ``socket_workers`` socket processes (by default the
        environment's ``SOCKET_WORKERS``, else 1, as ``ops/run``), logging warnings only,
        trusting the forwarded headers of the proxies the environment's
        ``DJANGO_TRUSTED_PROXIES`` lists (none by default) as ``ops/run`` does; returns once
        ``ready_path`` answers below 400."""
        self.port = port or free_port()
        if socket_workers is None:
            socket_workers = worker_count(SOCKET_WORKERS, self.env)
        argv = [str(BIN / "python"), "-m", "exchange.server", "--host", "127.0.0.1"]
        argv += ["--port", str(self.port), "--log-level", "warning", "--no-access-log"]
        argv += ["--web-workers", str(workers), "--socket-workers", str(socket_workers)]
        argv += uvicorn_args(trusted_proxies(self.env.get(PROXIES_VARIABLE)))
        process = self.spawn("server", argv)
        self.wait_http(f"{self.url}{ready_path}", "server", seconds=ready_seconds)
        return process

    def worker_name(self, role: str = "tasks") -> str:
        """The Celery node name of this stack's worker of ``role`` (or of a further matching
        worker's process name, ``matching1``...): only it counts on a shared broker."""
        return f"{role}-{os.getpid()}@{socket.gethostname()}"

    def start_worker(
        self, *, role: str = "tasks", concurrency: int = 2, partitions: str = "", name: str = ""
    ) -> Process:
        """A Celery worker of ``role`` (``exchange/celery.py``) named ``worker_name(name)``,
        as process ``name``: by default ``worker`` (the default queue) or ``matching`` (the
        matching partitions' queues: those of ``partitions``, ``"0,2"``, or all); the caller
        checks that it answers."""
        name = name or WORKER_PROCESS[role]
        argv = [str(BIN / "celery"), "-A", "exchange", "worker", "--loglevel", self.log_level]
        argv += ["--role", role, "--concurrency", str(concurrency)]
        if partitions:
            argv += ["--partitions", partitions]
        argv += ["--hostname", self.worker_name(role if name == "worker" else name)]
        argv += ["--without-gossip", "--without-mingle"]
        return self.spawn(name, argv)

    def start_workers(self, matching: int = 1) -> None:
        """The workers ``ops/run`` starts: ``matching`` for the matching cycles (one process
        each: its cycles run back to back; with several, each takes every ``matching``-th
        of the ``MATCHING_PARTITIONS`` in ``env``, ``matching_split``), one for every other
        task, and the subscription engine's processes (``start_subscription_engines``)."""
        partitions = int(self.env.get("MATCHING_PARTITIONS") or 1)
        for i, chosen in enumerate(matching_split(matching, partitions)):
            name = "matching" if i == 0 else f"matching{i}"
            self.start_worker(role="matching", concurrency=1, partitions=chosen, name=name)
        self.start_worker(role="tasks", concurrency=2)
        self.start_subscription_engines()

    def start_beat(self) -> Process:
        """Celery beat, its schedule file beside the logs (one per stack process)."""
        argv = [str(BIN / "celery"), "-A", "exchange", "beat", "--loglevel", self.log_level]
        schedule = self.log_dir / f"celerybeat-{os.getpid()}"
        return self.spawn("beat", [*argv, "--schedule", str(schedule)])

    def start_subscription_engines(self, count: int | None = None) -> list[Process]:
        """``count`` subscription engine processes (``manage.py subscription_engine``,
        issue 35; by default ``SUBSCRIPTION_ENGINE_PROCESSES`` of the environment, else
        one, as ``ops/run``), named ``engine0``, ``engine1``, ...; they share the
        partitions through their leases."""
        if count is None:
            count = int(self.env.get("SUBSCRIPTION_ENGINE_PROCESSES", "1"))
        return [
            self.spawn(
                f"engine{i}",
                [
                    str(BIN / "python"),
                    "manage.py",
                    "subscription_engine",
                    "--name",
                    f"engine{i}-{os.getpid()}",
                ],
            )
            for i in range(count)
        ]

    def check_alive(self, name: str) -> None:
        process = self.processes[name]
        if not process.alive():
            raise RuntimeError(f"{name} exited with {process.popen.returncode}:\n{process.tail()}")

    def wait_http(self, url: str, name: str, *, seconds: float = 60) -> None:
        """Until ``url`` answers (any status below 400), while process ``name`` stays alive."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check_alive(name)
            try:
                urllib.request.urlopen(url, timeout=2)
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{name} did not answer on {url}:\n{self.processes[name].tail()}")

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            process.stop()
        self.processes.clear()
        # Beat's schedule is this stack's alone (``start_beat``): no later stack reads it.
        mine = f"celerybeat-{os.getpid()}"
        for path in [self.log_dir / mine, *self.log_dir.glob(f"{mine}.*")]:
            path.unlink(missing_ok=True)
