"""What the numbers were measured on: the machine, the software, the commit, the load."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def cpu_model() -> str:
    """The processor's name as ``lscpu`` gives it (``AMD EPYC``, ``Intel(R) Xeon(R) Processor``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return float("nan")


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def pace_ns(iterations: int = 2_000_000) -> float:
    """The machine's pace now: this process's CPU time per iteration of an empty Python loop,
    in nanoseconds. On a shared VM it moves by a third within minutes (24 to 40 ns on one AMD
    EPYC in an afternoon), and every CPU figure moves with it, so a report gives it beside
    them."""
    start = time.process_time_ns()
    for _ in range(iterations):
        pass
    return (time.process_time_ns() - start) / iterations


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def host() -> dict[str, Any]:
    """The date, the commit and the machine, without asking any service."""
    commit = _git("rev-parse", "--short=12", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 0,
        "memory_gib": round(_memory_gib(), 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average_start": load_average(),
    }


def describe(server_version: str, spark_master: str) -> dict[str, Any]:
    """``host()`` and the software the matching benchmark ran on."""
    return host() | {"postgresql": server_version, "spark_master": spark_master}


# Which part of the stack a process is, from its command line (``ops/stack.py`` starts
# them): the first pattern found names it.
KINDS = (
    ("redis-server", "redis"),
    ("subscription_engine", "engines"),
    ("--role\0web", "HTTP"),
    ("--role\0socket", "sockets"),
    ("exchange.server", "HTTP"),  # the web tier's parent, which hands out the sockets
    ("\0beat", "beat"),
    ("celery", "workers"),
)


def cpu_snapshot() -> dict[int, tuple[str, float]]:
    """Every process's kind and CPU seconds so far (user and system, ``/proc/<pid>/stat``):
    this one's ``load``; PostgreSQL's by its title (``_postgres_kind``); the stack's by
    ``KINDS``, a Celery worker's with its ``--role``; anything else ``other``.

    A backend that has ended is no longer listed, but the postmaster that reaped it holds
    its time (its children's user and system time, fields 16 and 17): that goes in under
    the postmaster's pid negated, as ``postgres backends``, so that the backends of
    connections closed during a run still count (a pool recycling its connections, a
    Celery task's own). Other processes' reaped children are not counted: this one's are
    the stack's, whose kinds are gone with them."""
    tick = os.sysconf("SC_CLK_TCK")
    me = os.getpid()
    out: dict[int, tuple[str, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace")
        except OSError:
            continue  # exited meanwhile
        if pid == me:
            kind = "load"
        elif argv.startswith("postgres:") or argv.split("\0", 1)[0].endswith("/postgres"):
            kind = _postgres_kind(argv)  # (its title, or the postmaster's command)
        else:
            kind = next((k for p, k in KINDS if p in argv), "other")
        if kind == "workers" and "\0--role\0" in argv:  # as ops/stack.py names them
            kind = "worker " + argv.split("\0--role\0", 1)[1].split("\0", 1)[0]
        out[pid] = (kind, (int(fields[11]) + int(fields[12])) / tick)
        if kind == "postgres":  # a postmaster (the primary's or a replica's)
            out[-pid] = ("postgres backends", (int(fields[13]) + int(fields[14])) / tick)
    return out


# The processes of PostgreSQL's own that name themselves first in their title.
PG_AUXILIARY = {
    "walsender",
    "walreceiver",
    "startup",
    "autovacuum",
    "checkpointer",
    "background",
    "walwriter",
    "logical",
    "archiver",
}


def _postgres_kind(title: str) -> str:
    """A PostgreSQL process's part, from the title it sets: one of its own
    (``PG_AUXILIARY``: the ``walsender``, the replica's ``startup`` replaying, ...), else
    a client's backend."""
    if not title.startswith("postgres: "):
        return "postgres"  # the postmaster
    words = title[len("postgres: ") :].split()
    return f"postgres {words[0]}" if words and words[0] in PG_AUXILIARY else "postgres backends"


def cpu_by_kind(before: dict[int, tuple[str, float]]) -> dict[str, float]:
    """The CPU seconds each kind of process spent since ``before`` (a ``cpu_snapshot``),
    most first; a process started since counts whole, one ended since is lost unless a
    postmaster reaped it (``cpu_snapshot``)."""
    spent: dict[str, float] = {}
    now = cpu_snapshot()
    for pid, (kind, cpu) in now.items():
        was = before.get(pid)
        used = cpu - (was[1] if was is not None and was[0] == kind else 0.0)
        spent[kind] = spent.get(kind, 0.0) + used
    # A PostgreSQL process that ended since came back whole in its postmaster's reaped time:
    # what it had spent before is not this run's.
    for pid, (kind, cpu) in before.items():
        if pid > 0 and pid not in now and kind.startswith("postgres "):
            spent["postgres backends"] = spent.get("postgres backends", 0.0) - cpu
    return dict(
        sorted(((k, round(v, 1)) for k, v in spent.items() if v > 0), key=lambda kv: -kv[1])
    )
