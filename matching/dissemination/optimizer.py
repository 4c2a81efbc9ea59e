"""The cost-based choice of a dissemination strategy per change (SPEC 8.3).

The producer describes a change as a ``Plan``: per consumer that holds watches of a
changed family, the watches it is estimated to have affected (the family's sampled
interval index searched with the delta's ranges, spread over the consumers in proportion
to the watches each holds), the index searches it would run, the bytes of the
reformulated deltas and the raw changes a relax replica would have to apply (the current
one and any it missed). ``Optimizer.estimate`` prices each strategy as the server time it
costs in total, producer, wire and consumers together:

* enumerate: per affected watch an encoding at the producer and the consumer's update,
  one message per consumer expected to hold an affected watch, its bytes, one index
  search per delta at the producer;
* relax: per receiving consumer one message, its bytes (raw entries), applying those
  entries to the replica, its index searches and its affected watches' updates;
* reformulate: the same without the replica's entries, with the deltas' bytes instead.

The coefficients (``Costs``) start from defaults and follow measurements (``observe``: a
moving average of seconds per unit). Every choice is kept, with its estimates, in a
bounded log (``choices``) that the staff dashboard reads.
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

MESSAGE_OVERHEAD = 24  # bytes of a message's envelope (seq and kind) on the wire


@dataclass
class Costs:
    """Seconds per unit of work."""

    message: float = 60e-6  # sending, routing and receiving one message
    byte: float = 10e-9
    lookup: float = 15e-6  # one interval-index search
    watch: float = 6e-6  # one affected watch at its consumer (answer, threshold, notify)
    encode: float = 2e-6  # one affected watch's answer encoded by the producer
    entry: float = 8e-6  # one raw change applied to a relax replica


@dataclass(frozen=True)
class Plan:
    affected: dict[int, float]
    lookups: dict[int, int]
    delta_bytes: dict[int, int]
    relax_entries: dict[int, int]
    entry_bytes: int
    answer_bytes: int


@dataclass(frozen=True)
class Estimate:
    messages: float
    bytes: float
    seconds: float


@dataclass
class Optimizer:
    costs: Costs = field(default_factory=Costs)
    log_size: int = 1000
    smoothing: float = 0.2  # weight of a new measurement in the moving average
    sink: Callable[[dict[str, Any]], None] | None = None  # also told every choice (Redis)

    def __post_init__(self) -> None:
        self.log: deque[dict[str, Any]] = deque(maxlen=self.log_size)

    def estimate(self, plan: Plan) -> dict[str, Estimate]:
        c = self.costs
        affected = sum(plan.affected.values())
        deltas = max(plan.lookups.values(), default=0)
        # a consumer is sent an enumerate message when it holds an affected watch: with a
        # fraction of one watch expected, that is about the chance it holds one
        messages = sum(min(1.0, a) for a in plan.affected.values())
        nbytes = messages * MESSAGE_OVERHEAD + affected * plan.answer_bytes
        enumerate_ = Estimate(
            messages,
            nbytes,
            deltas * c.lookup
            + affected * (c.encode + c.watch)
            + messages * c.message
            + nbytes * c.byte,
        )
        receivers = len(plan.lookups)
        searches = sum(plan.lookups.values())
        nbytes = receivers * MESSAGE_OVERHEAD + sum(plan.delta_bytes.values())
        reformulate = Estimate(
            receivers,
            nbytes,
            receivers * c.message + nbytes * c.byte + searches * c.lookup + affected * c.watch,
        )
        entries = sum(plan.relax_entries.values())
        nbytes = receivers * MESSAGE_OVERHEAD + entries * plan.entry_bytes
        relax = Estimate(
            receivers,
            nbytes,
            receivers * c.message + nbytes * c.byte + entries * c.entry + searches * c.lookup
            + affected * c.watch,
        )  # fmt: skip
        return {"enumerate": enumerate_, "relax": relax, "reformulate": reformulate}

    def choose(self, seq: int | None, plan: Plan) -> str:
        """The cheapest strategy (ties in the order enumerate, relax, reformulate), logged."""
        estimates = self.estimate(plan)
        choice = min(estimates, key=lambda s: estimates[s].seconds)
        entry = {
            "at": dt.datetime.now(dt.UTC).isoformat(),
            "seq": seq,
            "choice": choice,
            "estimates": {s: asdict(e) for s, e in estimates.items()},
        }
        self.log.append(entry)
        if self.sink is not None:
            self.sink(entry)
        return choice

    def observe(self, cost: str, seconds: float, units: float) -> None:
        """A measurement: ``units`` of ``cost`` (a ``Costs`` field) took ``seconds``."""
        if cost not in {f.name for f in fields(Costs)}:
            raise ValueError(f"unknown cost {cost!r}")
        if units <= 0 or seconds < 0:
            return
        old = getattr(self.costs, cost)
        setattr(self.costs, cost, (1 - self.smoothing) * old + self.smoothing * seconds / units)

    def choices(self, limit: int = 100) -> list[dict[str, Any]]:
        """The latest choices, newest first."""
        return list(self.log)[::-1][:limit]
