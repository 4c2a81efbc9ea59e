"""The four workloads of seed 000, section 5, as numbers: no Spark, no database.

Every workload is sized so that the expected number of matching pairs stays the same
whatever the numbers of subscriptions and publications (except ``proportional``, whose
matches grow with the subscriptions on purpose):

* ``fixed``: every constraint is ``int x = R``, R uniform in ``1 .. subs*pubs/5``, so a
  publication and a subscription agree with probability ``5/(subs*pubs)``: about 5
  matching pairs in all;
* ``proportional``: ``int x = R``, R uniform in ``1 .. 100*pubs``: about ``subs/100``
  pairs, whatever the number of publications;
* ``large_intermediate``: ``int x1 = R1 AND ... AND int xn = Rn``, each R uniform in
  {0, 1}: every term agrees with half of the other side (a large intermediate answer),
  all n terms with ``2**-n`` of it; n is the length that makes ``subs*pubs*2**-n`` at
  least 1 and as close to 5 as possible;
* ``geometric``: subscriptions ``box b OVERLAPS`` a box of side ``EPSILON`` at a point
  uniform in the unit square; publications ``box b =`` a square of side ``w`` inside the
  unit square, ``w**2 = 5/(subs*pubs)``, so a point-like subscription overlaps it with
  probability ``w**2``: about 5 pairs.

Coordinates are multiples of ``1/GRID``: a value is drawn as an integer ``k`` and written
as the exact decimal ``k/GRID``, which every reader (PostgreSQL, Python, Spark) turns into
the same double. The side ``w`` is rounded to the grid as well (``width_units``); at the
sizes the paper uses that changes the area by less than one part in a thousand.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

KINDS: tuple[str, ...] = ("fixed", "proportional", "large_intermediate", "geometric")

# Grid of the geometric coordinates: nine decimals.
GRID = 1_000_000_000
GRID_DIGITS = 9

# The side of a subscription's box ("trivially small"): one grid step.
EPSILON_UNITS = 1

# The expected number of matching pairs the paper aims at.
EXPECTED_MATCHES = 5


def fixed_top(subs: int, pubs: int) -> int:
    """The largest value of the fixed workload: ``subs*pubs/5`` (at least 1)."""
    return max(1, subs * pubs // EXPECTED_MATCHES)


def proportional_top(pubs: int) -> int:
    """The largest value of the proportional workload: ``100*pubs``."""
    return 100 * pubs


def terms(subs: int, pubs: int) -> int:
    """The length n of a large-intermediate constraint.

    The n with ``subs*pubs*2**-n >= 1`` closest to 5 (no ties are possible: a ratio of an
    integer and a power of two is never 20/3). At least one term, even when there are
    too few pairs for one expected match.
    """
    pairs = subs * pubs
    best = 1
    n = 1
    while pairs / 2**n >= 1:
        if abs(pairs / 2**n - EXPECTED_MATCHES) < abs(pairs / 2**best - EXPECTED_MATCHES):
            best = n
        n += 1
    return best


def box_width(subs: int, pubs: int) -> float:
    """The exact side w of a publication's square: ``w**2 = 5/(subs*pubs)`` (at most 1)."""
    return min(1.0, math.sqrt(EXPECTED_MATCHES / (subs * pubs)))


def width_units(subs: int, pubs: int) -> int:
    """The side of a publication's square in grid steps (at least one)."""
    return max(1, min(GRID, round(box_width(subs, pubs) * GRID)))


@dataclass(frozen=True)
class Workload:
    """One workload: its kind, its sizes and the seed that fixes every value."""

    kind: str
    subs: int
    pubs: int
    seed: int

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown workload kind {self.kind!r}: use one of {', '.join(KINDS)}")
        if self.subs < 1 or self.pubs < 1:
            raise ValueError("a workload needs at least one subscription and one publication")
        if not 0 <= self.seed < 2**31:
            raise ValueError("the seed is an integer in 0 .. 2**31-1")

    def parameters(self) -> dict[str, int | float]:
        """The derived parameters of the kind, as recorded in the manifest."""
        if self.kind == "fixed":
            return {"top": fixed_top(self.subs, self.pubs)}
        if self.kind == "proportional":
            return {"top": proportional_top(self.pubs)}
        if self.kind == "large_intermediate":
            return {"terms": terms(self.subs, self.pubs)}
        units = width_units(self.subs, self.pubs)
        return {
            "grid": GRID,
            "epsilon": EPSILON_UNITS / GRID,
            "width": box_width(self.subs, self.pubs),
            "width_units": units,
            "effective_width": units / GRID,
        }

    def expected_matches(self) -> float:
        """The expected number of matching pairs over all publications and subscriptions."""
        pairs = self.subs * self.pubs
        if self.kind == "fixed":
            return pairs / fixed_top(self.subs, self.pubs)
        if self.kind == "proportional":
            return pairs / proportional_top(self.pubs)
        if self.kind == "large_intermediate":
            return pairs / (1 << terms(self.subs, self.pubs))
        # On the grid a subscription at [a, a+eps] meets [x, x+w] iff a is one of the
        # w + eps + 1 steps from x-eps to x+w (the boxes are closed).
        side = (width_units(self.subs, self.pubs) + EPSILON_UNITS + 1) / GRID
        return pairs * min(1.0, side) ** 2

    def as_dict(self) -> dict[str, object]:
        return {
            **asdict(self),
            "parameters": self.parameters(),
            "expected_matches": self.expected_matches(),
        }
