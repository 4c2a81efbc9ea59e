"""How many processes the web tier runs (``exchange/server.py``): ``WEB_WORKERS`` serve HTTP
(2 by default), ``SOCKET_WORKERS`` serve the WebSockets handed over by them (1 by default; 0:
the HTTP processes carry the sockets themselves, as before issue 36; ``docs/benchmarks.md``,
*The socket tier*, says when each was faster). Plain Python, no Django: the server's
supervisor reads them before any settings are loaded, ``exchange/settings/base.py`` names them
for everything else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

WEB_WORKERS = "WEB_WORKERS"
SOCKET_WORKERS = "SOCKET_WORKERS"
DEFAULTS = {WEB_WORKERS: 2, SOCKET_WORKERS: 1}


class WorkerCountError(ValueError):
    """A process count that is not a whole number in range."""


def worker_count(name: str, environ: Mapping[str, str] | None = None) -> int:
    """The count ``name`` (``WEB_WORKERS`` or ``SOCKET_WORKERS``) of ``environ`` (by default
    the process's environment), its default when unset or empty. ``WEB_WORKERS`` is 1 or
    more, ``SOCKET_WORKERS`` 0 or more."""
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    if not raw:
        return DEFAULTS[name]
    lowest = 1 if name == WEB_WORKERS else 0
    try:
        value = int(raw)
    except ValueError:
        value = lowest - 1
    if value < lowest:
        raise WorkerCountError(f"{name} must be a whole number, {lowest} or more; not {raw!r}")
    return value


# How long after a socket process's last beat (or its start) the HTTP processes still hand
# new WebSockets over, waiting for the supervisor to start it again (``exchange/socket_beats.py``);
# past it they serve them themselves.
SOCKET_HANDOVER_GRACE = "SOCKET_HANDOVER_GRACE_SECONDS"


class HandoverGraceError(ValueError):
    """A hand-over grace that is not a number of seconds above 0."""


HANDOVER_GRACE_DEFAULT = 30.0


def handover_grace(environ: Mapping[str, str] | None = None) -> float:
    """``SOCKET_HANDOVER_GRACE_SECONDS`` of ``environ`` (by default the process's), seconds
    above 0; its default (30) when unset or empty."""
    raw = (os.environ if environ is None else environ).get(SOCKET_HANDOVER_GRACE, "").strip()
    if not raw:
        return HANDOVER_GRACE_DEFAULT
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise HandoverGraceError(
            f"{SOCKET_HANDOVER_GRACE} must be a number of seconds above 0; not {raw!r}"
        )
    return value
