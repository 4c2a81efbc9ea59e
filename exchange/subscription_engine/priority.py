"""The engine processes' CPU priority (``SUBSCRIPTION_ENGINE_NICE``, issue 35 item 7).

For a host where the engines share a few cores with the order path. On the two cores of
SPEC 9's machine the engines' evaluation, run at the others' priority, made the bid path's
frame about 30% slower, and at the lowest priority nothing measurable; but at a lowered
priority the alerts' tail at 100,000 subscriptions went past SPEC 9's bar, so the setting's
default is 0 (``ops/benchmarks/alerts.py``, docs/benchmarks.md, *The engines at the lowest
priority*).

A process's own nice is not enough on Linux: with ``sched_autogroup_enabled`` the scheduler
first shares the cores between the sessions' autogroups, then within each, and
``ops/stack.py`` starts every process of the stack in a session of its own. So the nice is
given to the session's autogroup as well (``/proc/self/autogroup``), but only by a process
that leads its session: another's would lower the shell it was started from. Under systemd
(each service in a cgroup of its own, where autogroups do not apply) the same is
``CPUWeight=idle`` or a low ``CPUWeight`` on the engine's unit.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

AUTOGROUP = "/proc/self/autogroup"


def autogroup_nice(pid: int | str = "self") -> int | None:
    """The nice of process ``pid``'s autogroup (``/proc/<pid>/autogroup`` reads
    ``/autogroup-7 nice 19``); None on a kernel without autogroups, and for a process of the
    system's first session, whose group is the root group and reads empty (a CI runner's
    processes can be in it)."""
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            text = f.read().split()
    except FileNotFoundError:
        return None
    return int(text[-1]) if text else None


def run_at_nice(nice: int) -> bool:
    """Lower this process's CPU priority to ``nice`` (0 to 19; 0 leaves it as it is): the
    calling thread's, which threads started after it inherit, and its session's autogroup's
    when it leads the session. Never raises a priority: a process started at a higher nice
    keeps it (raising one needs a privilege an engine need not have). True when the
    autogroup took it."""
    if nice <= 0:
        return False
    if os.getpriority(os.PRIO_PROCESS, 0) < nice:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    if os.getsid(0) != os.getpid() or autogroup_nice() is None:
        return False  # (not its session's to lower, or no autogroup applies to it)
    try:
        with open(AUTOGROUP, "w") as f:
            f.write(str(nice))
    except OSError:  # (a kernel that refuses: the process's nice still holds within its group)
        log.warning("the autogroup's nice could not be set to %s", nice, exc_info=True)
        return False
    return True
