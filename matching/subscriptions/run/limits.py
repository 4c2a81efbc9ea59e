"""What one subscription may cost, checked as it runs (SPEC 8.3's fine point on work
limits, SPEC 9's Isolation): the one home of these limits.

A subscription that passes one of them is suspended with ``{"error": "state_limit"}``
at the event that passed it (``evaluator.Subscription``), offline and live alike; a
well-formed query is never refused for its cost at registration. The limits are per
subscription:

* ``state``: the events it holds (open windows, events kept for joins) or a pattern's
  live instances, counted after each event (one event adds at most one event per alias,
  or advances each instance once, so the count is never far past it);
* ``state_bytes``: the size of the events it holds, as ``event_size`` estimates their
  JSON text (a pattern's instances hold events that the log holds anyway: counted by
  ``state`` only);
* ``work``: for one event, the candidate tuples a composite join examines, counted
  before each list of candidates is walked, so the join stops before it does the work;
* ``outputs``: for one event, the notifications it would send; a composite stops
  building tuples as soon as it has one too many. The event's outputs are then not
  sent: the suspension takes their place.

A pattern's work for one event is bounded by its instances (each is advanced at most
once, and an iteration makes at most one copy), so by ``state``.

``Meter`` also carries a caller's ``interrupt`` (a backtest's deadline), asked every
``CHECK_EVERY`` units of work inside a join or a pattern's event (one unit per instance
offered) as well as between events, so that a bound in time holds however the time is
spent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# The SPEC's number: held events or instances.
STATE_LIMIT = 100_000
# 4 MiB of held events' JSON text: about 16,000 events of the log's usual 250 bytes.
STATE_BYTES_LIMIT = 4 * 1024 * 1024
# Candidate tuples one event may make a composite join examine (about 3 us each in Python,
# so some 60 ms at most on an Intel Xeon; a worked example needs a few).
WORK_LIMIT = 20_000
# Notifications one event may cause (a backtest returns at most 10,000 in all).
OUTPUT_LIMIT = 10_000
# Units of work between two calls of an interrupt.
CHECK_EVERY = 1_000


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one subscription (the defaults are the product's; tests lower them)."""

    state: int = STATE_LIMIT
    state_bytes: int = STATE_BYTES_LIMIT
    work: int = WORK_LIMIT
    outputs: int = OUTPUT_LIMIT


LIMITS = Limits()


class LimitPassed(Exception):  # not an error: the subscription's end
    """An engine passed ``limit`` (``"work"`` or ``"outputs"``) in the middle of an event;
    the ``Subscription`` suspends itself (its engine is left half-way and never used
    again)."""

    def __init__(self, limit: str) -> None:
        super().__init__(limit)
        self.limit = limit


class Interrupted(Exception):  # not an error: the caller asked to stop
    """The caller's ``interrupt`` answered true: the evaluation stops where it is. The
    subscription is left finished (its engine is half-way through an event)."""


class Meter:
    """One event's work for one subscription: ``spend`` before doing ``units`` of it
    raises ``LimitPassed`` past ``work``, and every ``CHECK_EVERY`` units asks
    ``interrupt`` (``Interrupted`` when it answers true); ``emit`` counts outputs."""

    __slots__ = ("work", "spent", "outputs", "emitted", "interrupt", "check_at")

    def __init__(self, limits: Limits, interrupt: Callable[[], bool] | None = None) -> None:
        self.work = limits.work
        self.outputs = limits.outputs
        self.spent = 0
        self.emitted = 0
        self.interrupt = interrupt
        self.check_at = CHECK_EVERY

    def spend(self, units: int) -> None:
        self.spent += units
        if self.spent > self.work:
            raise LimitPassed("work")
        if self.interrupt is not None and self.spent >= self.check_at:
            self.check_at = self.spent + CHECK_EVERY
            if self.interrupt():
                raise Interrupted

    def emit(self) -> None:
        self.emitted += 1
        if self.emitted > self.outputs:
            raise LimitPassed("outputs")


def event_size(raw: Mapping[str, Any]) -> int:
    """About the length of ``raw``'s JSON text (what ``state_bytes`` counts): each key and
    string value with its quotes and separators, other values as eight characters."""
    size = 2
    for key, value in raw.items():
        size += len(key) + (len(value) + 6 if isinstance(value, str) else 12)
    return size
