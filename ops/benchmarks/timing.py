"""A measurement repeated: how many runs (``Budget``), their times (``Repeats``), and the
pair of ids every timed match returns. Shared by the stores' experiments
(``experiments.py``) and the Spark matcher beside them (``spark_matcher.py``), which
``experiments.py`` runs: here, so that the two do not import each other."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# A match: (publication id, subscription id).
Pair = tuple[int, int]


@dataclass
class Repeats:
    """Seconds of the timed repeats of one measurement (after the untimed warm-up)."""

    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    @property
    def mean(self) -> float:
        return statistics.fmean(self.seconds) if self.seconds else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {"median": self.median, "mean": self.mean, "runs": self.seconds}


@dataclass
class Budget:
    """How to repeat a measurement.

    First untimed warm-up runs: at least one, and up to ``warm`` while they take under
    ``warm_seconds`` in all (a running exchange matches all the time: its statements are
    prepared and their plans cached, which psycopg does from the fifth run of a statement
    and PostgreSQL's plan cache a few runs later). Then timed runs: at least ``least``,
    more while they fit in ``seconds`` (up to ``most``); a measurement whose warm-up run
    took over ``slow`` seconds gets only ``least_slow`` timed runs.
    """

    least: int = 3
    most: int = 200
    seconds: float = 2.0
    slow: float = 10.0
    least_slow: int = 1
    warm: int = 12
    warm_seconds: float = 1.0


def repeat(run: Callable[[], Any], budget: Budget, warm_seconds: float) -> Repeats:
    result = Repeats()
    least = budget.least_slow if warm_seconds > budget.slow else budget.least
    spent = 0.0
    while len(result.seconds) < least or (
        spent < budget.seconds and len(result.seconds) < budget.most
    ):
        started = time.perf_counter()
        run()
        elapsed = time.perf_counter() - started
        result.seconds.append(elapsed)
        spent += elapsed
    return result
