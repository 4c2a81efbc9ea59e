"""The workloads ``matching.store.explain`` draws use the formulas of
``matching.workload.parameters`` (one copy of each): no database needed."""

import pytest

from matching import to_text
from matching.model import Attribute, BoxEq, BoxOverlaps, Interval, Type, Wildcard
from matching.store.explain import WORKLOADS, workload_items
from matching.workload.parameters import (
    EPSILON_UNITS,
    GRID,
    KINDS,
    fixed_top,
    proportional_top,
    terms,
    width_units,
)

SUBS, PUBS = 400, 3


def _values(items, attribute):
    out = []
    for _, constraint in items:
        (disjunct,) = constraint.disjuncts
        out.append(disjunct.get(attribute))
    return out


def test_every_kind_of_the_generator_and_the_wildcard_variant_is_offered():
    assert ("wildcard", *KINDS) == WORKLOADS


@pytest.mark.parametrize(
    ("kind", "top"),
    [("fixed", fixed_top(SUBS, PUBS)), ("proportional", proportional_top(PUBS))],
)
def test_equality_workloads_draw_from_one_to_the_top_of_their_formula(kind, top):
    pubs, subs = workload_items(kind, SUBS, PUBS, seed=7)

    assert [i for i, _ in pubs] == list(range(PUBS))
    assert [i for i, _ in subs] == list(range(SUBS))
    values = _values(pubs + subs, Attribute("x", Type.INT))
    assert all(type(v) is Interval and v.lo == v.hi and 1 <= v.lo <= top for v in values)
    assert max(v.lo for v in values) > top // 2  # the whole range is used, not a fixed part


def test_large_intermediate_constraints_have_the_formula_s_number_of_terms():
    pubs, subs = workload_items("large_intermediate", SUBS, PUBS, seed=7)

    n = terms(SUBS, PUBS)
    for _, constraint in pubs + subs:
        (disjunct,) = constraint.disjuncts
        assert [a.name for a, _ in disjunct] == [f"x{k}" for k in range(1, n + 1)]
        assert {p.lo for _, p in disjunct} <= {0, 1}


def test_geometric_boxes_lie_on_the_grid_with_the_formula_s_sides():
    pubs, subs = workload_items("geometric", SUBS, PUBS, seed=7)

    b = Attribute("b", Type.BOX)
    for pred in _values(pubs, b):
        assert type(pred) is BoxEq
        assert round((pred.box.x2 - pred.box.x1) * GRID) == width_units(SUBS, PUBS)
        units = pred.box.x1 * GRID
        assert abs(units - round(units)) < 1e-6  # k / GRID for a whole k
        assert pred.box.x1 >= 0 and pred.box.x2 <= 1
    for pred in _values(subs, b):
        assert type(pred) is BoxOverlaps
        assert round((pred.box.y2 - pred.box.y1) * GRID) == EPSILON_UNITS


def test_the_wildcard_variant_is_the_fixed_workload_plus_a_wildcard():
    pubs, subs = workload_items("wildcard", SUBS, PUBS, seed=7)

    y = Attribute("y", Type.INT)
    assert all(type(v) is Interval for v in _values(pubs, y))
    assert all(type(v) is Wildcard for v in _values(subs, y))
    assert to_text(subs[0][1]).endswith("AND int y = *")


def test_the_same_seed_gives_the_same_items():
    assert workload_items("geometric", 50, 2, seed=3) == workload_items("geometric", 50, 2, seed=3)


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown workload kind"):
        workload_items("bogus", 10, 1, seed=1)
