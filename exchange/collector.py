"""The garbage collector's settings for the long-lived processes that run matching cycles.

CPython's cycle collector runs its youngest generation every 700 allocations net of frees and
now and then walks every tracked object of the process. A matching worker's process holds
about 100,000 objects that live as long as it does (modules, Django's apps and settings, the
ORM's model metadata) and each cycle allocates and drops hundreds of thousands more (rows,
parsed constraints, events). Measured on the cycle-cost bench (``ops/benchmarks/history.py
--cycles``), with the collector off during the log's writer, the writer's Python time fell
from 7.0 to 4.3 ms a cycle: the rest was collections that its allocations happened to
trigger, walking objects that can never be garbage.
"""

from __future__ import annotations

import gc

# Young collections every 10,000 net allocations instead of 700, and the older generations
# every 10 of the next younger one's (as by default).
THRESHOLDS = (10_000, 10, 10)


def collector_settle() -> None:
    """Move every object alive now out of the collector's sight (``gc.freeze``: they are
    still freed by reference counting, never walked again), and collect the young
    generation less often. Call it once a process has imported and set up what it keeps:
    the matching worker's pool process at its start (``exchange/celery.py``), the
    cycle-cost bench before its cycles."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
