"""Starts the real processes the way ops/run does: uvicorn (ASGI), a Celery worker, beat.

They run against the test database that pytest-django created, so tests that use them must
commit their rows (``transactional_db``).
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

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def process_env(database_name: str) -> dict[str, str]:
    """The environment of a child process: the test settings, pointed at the test database."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "exchange.settings.test"
    env["DATABASE_URL"] = (
        f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{database_name}"
    )
    env["REDIS_URL"] = str(settings.REDIS_URL)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)

    def kill(self) -> None:
        """SIGKILL the process and everything it started (its own process group)."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


@dataclass
class LiveStack:
    database_name: str
    log_dir: Path
    port: int = 0
    processes: dict[str, Process] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/"

    def spawn(self, name: str, argv: list[str]) -> Process:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{name}.log"
        handle = log.open("a")
        popen = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=process_env(self.database_name),
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, so a kill reaches its children
        )
        process = Process(name, popen, log)
        self.processes[name] = process
        return process

    def start_server(self) -> None:
        self.port = free_port()
        self.spawn(
            "server",
            [
                str(BIN / "uvicorn"),
                "exchange.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
        )
        self._wait_http(f"{self.url}/", "server")

    def start_worker(self) -> None:
        self.spawn(
            "worker",
            [
                str(BIN / "celery"),
                "-A",
                "exchange",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "2",
                "--hostname",
                f"test-{os.getpid()}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
        )
        from exchange.celery import app

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # Only this run's worker counts: other runs may share the broker.
            if app.control.ping(
                destination=[f"test-{os.getpid()}@{socket.gethostname()}"], timeout=0.5
            ):
                return
            self._check_alive("worker")
        raise RuntimeError("the Celery worker did not answer:\n" + self.processes["worker"].tail())

    def start_beat(self) -> None:
        schedule = self.log_dir / f"celerybeat-{os.getpid()}"
        self.spawn(
            "beat",
            [
                str(BIN / "celery"),
                "-A",
                "exchange",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(schedule),
            ],
        )

    def restart_worker(self) -> None:
        self.processes.pop("worker").stop()
        self.start_worker()

    def _check_alive(self, name: str) -> None:
        process = self.processes[name]
        if process.popen.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.popen.returncode}:\n{process.tail()}")

    def _wait_http(self, url: str, name: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self._check_alive(name)
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
