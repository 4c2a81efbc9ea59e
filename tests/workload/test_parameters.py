"""The parameters of seed 000's workloads (section 5), computed without Spark."""

from __future__ import annotations

import math

import pytest

from matching.workload import GRID, Workload, box_width, fixed_top, terms, width_units


def closest_terms(pairs: int) -> int:
    """Section 5 read literally: among the n with pairs * 2**-n >= 1, the closest to 5."""
    candidates = [n for n in range(1, 80) if pairs * 2.0**-n >= 1]
    return min(candidates, key=lambda n: abs(pairs * 2.0**-n - 5)) if candidates else 1


@pytest.mark.parametrize(
    ("subs", "pubs", "n"),
    [
        (100_000, 1, 14),  # 6.1 expected matches (15 terms would give 3.05)
        (1_000_000, 1, 18),  # 3.8 (17 terms would give 7.6)
        (100_000, 1000, 24),  # 5.96
        (1_000_000, 1000, 28),  # 3.7
        (1000, 3, 9),  # 5.86
        (10, 1, 1),  # 5 exactly
        (3, 1, 1),  # 1.5: the only length with at least one expected match
        (1, 1, 1),  # less than one match whatever n: one term all the same
    ],
)
def test_large_intermediate_length(subs: int, pubs: int, n: int) -> None:
    assert terms(subs, pubs) == n
    assert Workload("large_intermediate", subs, pubs, 0).parameters() == {"terms": n}


def test_large_intermediate_length_agrees_with_the_definition() -> None:
    for pairs in [2, 5, 7, 9, 10, 11, 19, 20, 21, 39, 40, 41, 100, 12_345, 10**6, 10**9]:
        assert terms(pairs, 1) == closest_terms(pairs), pairs


@pytest.mark.parametrize(
    ("subs", "pubs", "top"),
    [(100_000, 1, 20_000), (1_000_000, 1, 200_000), (100_000, 1000, 20_000_000), (2, 1, 1)],
)
def test_fixed_range_is_subs_times_pubs_over_five(subs: int, pubs: int, top: int) -> None:
    assert fixed_top(subs, pubs) == top
    assert Workload("fixed", subs, pubs, 0).parameters() == {"top": top}


def test_proportional_range_is_a_hundred_times_the_publications() -> None:
    assert Workload("proportional", 100_000, 1, 0).parameters() == {"top": 100}
    assert Workload("proportional", 100_000, 1000, 0).parameters() == {"top": 100_000}
    assert Workload("proportional", 100_000, 7, 0).expected_matches() == pytest.approx(1000)


@pytest.mark.parametrize(("subs", "pubs"), [(100_000, 1), (1_000_000, 1), (100_000, 1000)])
def test_geometric_area_is_five_over_the_pairs(subs: int, pubs: int) -> None:
    w = box_width(subs, pubs)
    assert w * w == pytest.approx(5 / (subs * pubs), rel=1e-12)
    units = width_units(subs, pubs)
    assert units == round(w * GRID)
    # The grid changes the area by less than one part in a thousand at these sizes.
    assert (units / GRID) ** 2 == pytest.approx(5 / (subs * pubs), rel=1e-3)
    assert Workload("geometric", subs, pubs, 0).expected_matches() == pytest.approx(5, rel=1e-2)


def test_geometric_width_never_exceeds_the_unit_square() -> None:
    assert box_width(1, 1) == 1.0  # sqrt(5) would not fit
    assert width_units(2, 1) == GRID
    assert width_units(10, 1) == round(math.sqrt(0.5) * GRID)


@pytest.mark.parametrize("kind", ["fixed", "large_intermediate", "geometric"])
def test_about_five_matches_whatever_the_sizes(kind: str) -> None:
    for subs, pubs in [(100_000, 1), (1_000_000, 1), (100_000, 10), (100_000, 1000)]:
        expected = Workload(kind, subs, pubs, 0).expected_matches()
        assert 1 <= expected <= 10, (kind, subs, pubs, expected)


@pytest.mark.parametrize(
    "bad",
    [("nope", 10, 1, 0), ("fixed", 0, 1, 0), ("fixed", 10, 0, 0), ("fixed", 10, 1, -1)],
)
def test_bad_workloads_are_refused(bad: tuple[str, int, int, int]) -> None:
    with pytest.raises(ValueError):
        Workload(*bad)
