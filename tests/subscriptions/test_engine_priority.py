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
from exchange.subscription_engine.priority import autogroup_nice, run_at_nice

def lowered():
    if "STARTED_AT" in os.environ:  # (as if started by ``nice``)
        os.setpriority(os.PRIO_PROCESS, 0, int(os.environ["STARTED_AT"]))
    took = run_at_nice(int(os.environ["NICE"]))
    seen = {}
    thread = threading.Thread(target=lambda: seen.update(nice=os.getpriority(os.PRIO_PROCESS, 0)))
    thread.start(); thread.join()
    return {"took": took, "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "thread_nice": seen["nice"], "group": autogroup_nice()}

if "IN_CHILD" in os.environ:  # lowered in a child of this session's leader, which then looks
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, json.dumps(lowered()).encode()); os._exit(0)
    os.close(w)
    seen = json.loads(os.read(r, 1 << 16)); os.waitpid(pid, 0)
    seen["leader_nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    seen["leader_group"] = autogroup_nice()
else:
    seen = lowered()
print(json.dumps(seen))
"""


def probe(nice: int, *, in_child: bool = False, started_at: int | None = None) -> dict:
    """What ``run_at_nice(nice)`` did, run by a session leader started for it, or by a child
    of that leader (``in_child``), which then also reports its own nice and autogroup's."""
    env = {**os.environ, "NICE": str(nice), "PYTHONPATH": str(ROOT)}
    if started_at is not None:
        env["STARTED_AT"] = str(started_at)
    if in_child:
        env["IN_CHILD"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        start_new_session=True,
    )
    return json.loads(done.stdout)


def test_a_session_leader_lowers_itself_its_later_threads_and_its_autogroup():
    seen = probe(19)
    assert (seen["nice"], seen["thread_nice"]) == (19, 19)
    if os.path.exists(AUTOGROUP):
        assert (seen["took"], seen["group"]) == (True, 19)
    else:  # a kernel without autogroups: the process's nice is what there is
        assert (seen["took"], seen["group"]) == (False, None)


def test_a_process_in_anothers_session_leaves_that_sessions_autogroup_alone():
    seen = probe(12, in_child=True)
    assert (seen["nice"], seen["thread_nice"], seen["took"]) == (12, 12, False)
    mine = os.getpriority(os.PRIO_PROCESS, 0)  # (the leader's, inherited from this process)
    assert (seen["leader_nice"], seen["leader_group"]) == (
        mine,
        0 if os.path.exists(AUTOGROUP) else None,
    )
    assert seen["group"] == seen["leader_group"]


def test_nice_zero_changes_nothing():
    seen = probe(0)
    assert (seen["nice"], seen["took"]) == (os.getpriority(os.PRIO_PROCESS, 0), False)
    assert seen["group"] in (None, 0)


def test_a_process_started_at_a_higher_nice_keeps_it():
    seen = probe(12, started_at=16)
    assert (seen["nice"], seen["thread_nice"]) == (16, 16)
