"""The garbage collector's settings for the long-lived processes: those that run matching
cycles, and the subscription engine's (``EngineHeap``).

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


# A full collection after a step once the subscriptions dropped since the last one come to a
# tenth of those followed, and at least this many (``EngineHeap``).
DROPPED_MIN = 1000


class EngineHeap:
    """The collector in a subscription engine process (issue 35). The process keeps every
    evaluator of its partitions alive for as long as it holds them: 1.6 million tracked
    objects at 30,000 subscriptions, which each full collection walked, 1.2 to 1.4 s with
    the process standing still (``gc.callbacks`` timing its steps over ``ops/benchmarks/
    alerts.py``'s database), about once in 20 to 30 s under 50 events a second: a stall of
    every alert behind it. So after each step everything alive is frozen (``gc.freeze``, a
    splice of lists whatever their length): young collections then walk only what one step
    made, and full ones never meet the evaluators.

    What a frozen object leaves when it dies is freed by reference counting, but a cycle is
    not: measured, 20 s of events left 3 such objects and dropping 3,000 subscriptions
    (forms 1, 3 and 4) about 100,000, some 34 each. So once the subscriptions dropped since
    the last full collection (deleted, paused, ended, or of partitions handed to another
    process) come to a tenth of those followed and at least ``DROPPED_MIN``, the next
    settle unfreezes and collects everything once: a stall, but one that churn pays for,
    not the mere passing of time."""

    def __init__(self) -> None:
        self.dropped = 0  # the engine's count of dropped subscriptions at the last collection

    def settle(self, *, dropped: int, followed: int) -> bool:
        """After a step of an engine that has dropped ``dropped`` subscriptions since it
        started and follows ``followed``: everything alive frozen, after a full collection
        if enough were dropped since the last. Whether it collected."""
        collect = dropped - self.dropped >= max(DROPPED_MIN, followed // 10)
        if collect:
            gc.unfreeze()
            gc.collect()
            self.dropped = dropped
        gc.freeze()
        return collect
