"""Whether the web tier's socket processes are alive, known to every process of the tier
(``exchange/server.py``): the HTTP processes decide from it whether to hand a WebSocket over
or serve it themselves, and ``/healthz`` reports it (``socket_workers``).

The supervisor makes one small file before it starts its processes and passes its descriptor
to each: a slot per socket process, ``(pid, started, beat)``. The supervisor writes a slot's
pid and start time whenever it starts that process; the process writes its beat (the time)
once it takes connections and then every ``BEAT_SECONDS``. Plain Python, no Django: the
supervisor and the processes read it before any settings are loaded.

A socket process is *alive* while its pid runs (not a zombie: the supervisor had not reaped it
yet) and it beat within ``STALE_SECONDS`` (a process whose loop is stuck stops beating).
New upgrades are *handed over* while the supervisor runs (it restarts a socket process that
dies) and some slot beat or was started within the hand-over grace (``web_tier``'s
``SOCKET_HANDOVER_GRACE_SECONDS``, 30 s): a connection handed over while its process is being
restarted waits in the pair for the new one, as before. Past that, or with the supervisor
gone, an HTTP process serves the WebSocket itself (as with ``SOCKET_WORKERS=0``) rather than
queue it where nobody may ever take it.
"""

from __future__ import annotations

import os
import struct
import tempfile
import time
from dataclasses import dataclass
from typing import Any

# A slot: the process's pid, the supervisor's start time of it, its last beat (0: none yet).
SLOT = struct.Struct("<qdd")
# How often a socket process beats, and how long a beat counts for ``/healthz``.
BEAT_SECONDS = 1.0
STALE_SECONDS = 10.0
SOCKET = "socket"


@dataclass(frozen=True)
class Slot:
    name: str
    pid: int
    started: float
    beat: float


def running(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie is not)."""
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # the state follows the command's name in parentheses, which may hold spaces
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: whether the pid exists at all
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class SocketBeats:
    """The slots of ``slots`` socket processes in the file open as ``fd``; ``supervisor``
    (the HTTP processes' parent) when read by an HTTP process."""

    def __init__(self, fd: int, slots: int, *, grace: float, supervisor: int | None = None):
        self.fd = fd
        self.slots = slots
        self.grace = grace
        self.supervisor = supervisor

    @classmethod
    def create(cls, slots: int, *, grace: float) -> SocketBeats:
        """The supervisor's new file (unlinked; inheritable, for its processes)."""
        with tempfile.TemporaryFile() as handle:
            fd = os.dup(handle.fileno())
        os.set_inheritable(fd, True)
        os.pwrite(fd, bytes(SLOT.size * slots), 0)
        return cls(fd, slots, grace=grace)

    def started(self, slot: int, pid: int, now: float | None = None) -> None:
        """The supervisor started ``pid`` as socket process ``slot``: no beat yet."""
        now = time.time() if now is None else now
        os.pwrite(self.fd, SLOT.pack(pid, now, 0.0), slot * SLOT.size)

    def beat(self, slot: int, now: float | None = None) -> None:
        """Socket process ``slot`` takes connections (its beat field only)."""
        now = time.time() if now is None else now
        os.pwrite(self.fd, struct.pack("<d", now), slot * SLOT.size + 16)

    def read(self) -> list[Slot]:
        raw = os.pread(self.fd, SLOT.size * self.slots, 0).ljust(SLOT.size * self.slots, b"\0")
        return [
            Slot(f"{SOCKET}{i}", *SLOT.unpack_from(raw, i * SLOT.size)) for i in range(self.slots)
        ]

    def alive(self, slot: Slot, now: float) -> bool:
        return slot.beat >= now - STALE_SECONDS and running(slot.pid)

    def supervisor_running(self) -> bool:
        return self.supervisor is None or os.getppid() == self.supervisor

    def handing_over(self, now: float | None = None) -> bool:
        """Whether an HTTP process hands a new WebSocket over (else it serves it itself)."""
        now = time.time() if now is None else now
        if not self.supervisor_running():
            return False
        return any(max(s.beat, s.started) >= now - self.grace for s in self.read())

    def status(self, now: float | None = None) -> dict[str, Any]:
        """``/healthz``'s ``socket_workers``: up while one socket process is alive; the ones
        that are not are named (``down``), and ``upgrades`` says where new WebSockets go."""
        now = time.time() if now is None else now
        slots = self.read()
        alive = [s.name for s in slots if self.alive(s, now)]
        return {
            "ok": bool(alive),
            "alive": alive,
            "down": [s.name for s in slots if s.name not in alive],
            "upgrades": "handed_over" if self.handing_over(now) else "served_here",
        }


# The tier's file as this process knows it: set by ``exchange.server`` in its HTTP processes
# when there are socket processes (None elsewhere: the process carries its sockets itself).
attached: SocketBeats | None = None


def attach(beats: SocketBeats | None) -> None:
    global attached
    attached = beats
