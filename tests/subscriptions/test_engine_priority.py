"""The engine processes' CPU priority (``exchange/subscription_engine/priority.py``): each
probe runs in a child process of its own, so that this one's priority stays as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from exchange.subscription_engine.priority import AUTOGROUP

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, threading
from exchange.subscription_engine.priority import run_at_nice
if "STARTED_AT" in os.environ:  # (as if started by ``nice``)
    os.setpriority(os.PRIO_PROCESS, 0, int(os.environ["STARTED_AT"]))
took = run_at_nice(int(os.environ["NICE"]))
seen = {}
thread = threading.Thread(target=lambda: seen.update(nice=os.getpriority(os.PRIO_PROCESS, 0)))
thread.start(); thread.join()
group = open("/proc/self/autogroup").read() if os.path.exists("/proc/self/autogroup") else None
print(json.dumps({"took": took, "nice": os.getpriority(os.PRIO_PROCESS, 0),
                  "thread_nice": seen["nice"], "group": group}))
"""


def probe(nice: int, *, own_session: bool, started_at: int | None = None) -> dict:
    start = {} if started_at is None else {"STARTED_AT": str(started_at)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**os.environ, **start, "NICE": str(nice), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        start_new_session=own_session,
    )
    return json.loads(done.stdout)


def group_nice(group: str | None) -> int | None:
    """The nice of ``/proc/<pid>/autogroup``'s text (``/autogroup-7 nice 19``)."""
    return None if group is None else int(group.split()[-1])


def test_a_session_leader_lowers_itself_its_later_threads_and_its_autogroup():
    seen = probe(19, own_session=True)
    assert (seen["nice"], seen["thread_nice"]) == (19, 19)
    if os.path.exists(AUTOGROUP):
        assert (seen["took"], group_nice(seen["group"])) == (True, 19)
    else:  # a kernel without autogroups: the process's nice is what there is
        assert (seen["took"], seen["group"]) == (False, None)


def test_a_process_in_anothers_session_leaves_that_sessions_autogroup_alone():
    mine = Path(AUTOGROUP).read_text() if os.path.exists(AUTOGROUP) else None
    seen = probe(12, own_session=False)
    assert (seen["nice"], seen["thread_nice"], seen["took"]) == (12, 12, False)
    assert group_nice(seen["group"]) == group_nice(mine)


def test_nice_zero_changes_nothing():
    seen = probe(0, own_session=True)
    assert (seen["nice"], seen["took"]) == (os.getpriority(os.PRIO_PROCESS, 0), False)
    assert group_nice(seen["group"]) in (None, 0)


def test_a_process_started_at_a_higher_nice_keeps_it():
    seen = probe(12, own_session=True, started_at=16)
    assert (seen["nice"], seen["thread_nice"]) == (16, 16)
