"""SPEC 3: the matching rule, every worked example and every cell of the intersection tables."""

import pytest

from matching import (
    Attribute,
    Box,
    BoxContains,
    BoxEq,
    BoxOverlaps,
    BoxWithin,
    Point,
    PointEq,
    PointWithin,
    Type,
    Wildcard,
    matches,
    matching_disjunct_pairs,
    parse,
    predicates_intersect,
)
from matching.printer import predicate_text

OFFER = "topic = 'pencils' AND lot BETWEEN 1000 AND 10000 AND price = 1.00"

# SPEC 3.3, row by row: (publication, subscription, match).
SPEC_3_3 = [
    ("x = 1", "x = 1 AND y = 1", True),
    ("x = 1 AND y = 1", "x = 1", False),
    ("x < 1", "x < 2", True),
    ("x < 2", "x < 1", True),  # "and also with the roles swapped"
    ("x < 5 AND y = 1", "x < 6 AND y = 3", False),
    ("x < 5 AND y = 1", "x < 4 AND y < 2", True),
    ("int x = 5", "int x < 7", True),
    ("double x = 5.0", "int x < 7", False),
    (OFFER, "topic = 'pencils' AND lot IN [2000, 5000] AND price <= 1.10", True),
    (OFFER, "topic = 'pencils' AND lot IN [2000, 5000] AND price <= 0.95", False),
    (OFFER, "topic = 'pencils' AND price <= 1.10", False),
    (OFFER, "topic = 'pencils' AND int lot = * AND price <= 1.10", True),
    ("b = BOX(0, 0, 1, 1)", "b OVERLAPS BOX(1, 1, 2, 2)", True),
]


@pytest.mark.parametrize(("publication", "subscription", "expected"), SPEC_3_3)
def test_spec_3_3_worked_examples(publication, subscription, expected):
    assert matches(publication, subscription) is expected


def test_matches_accepts_constraints_as_well_as_text():
    publication, subscription = parse("x = 1"), parse("x = 1 AND y = 1")

    assert matches(publication, subscription) is True
    assert matches(subscription, publication) is False


def test_any_pair_of_disjuncts_is_enough():
    # given an offer in two price tiers and a bid that fits only the second
    offer = "(lot BETWEEN 1000 AND 4999 AND price = 1.00) OR (lot BETWEEN 5000 AND 10000 AND price = 0.90)"
    bid = "lot = 6000 AND price <= 0.95"

    # then exactly the second tier matches
    assert matching_disjunct_pairs(offer, bid) == [(1, 0)]
    assert matches(offer, bid) is True
    assert matching_disjunct_pairs(offer, "lot = 6000 AND price <= 0.85") == []


def test_matching_disjunct_pairs_lists_every_pair_in_order():
    assert matching_disjunct_pairs("x = 1 OR x = 5", "x < 3 OR x > 0") == [(0, 0), (0, 1), (1, 1)]


# -- ordered types: PostgreSQL && on the analogue ranges ------------------------------------


@pytest.mark.parametrize(
    ("p", "q", "expected"),
    [
        # dense: open and closed bounds decide a shared end point
        ("x < 5.0", "x >= 5.0", False),
        ("x <= 5.0", "x >= 5.0", True),
        ("x < 5.0", "x > 4.99", True),
        ("x IN (1.0, 2.0)", "x IN (2.0, 3.0)", False),
        ("x IN (1.0, 2.0]", "x IN [2.0, 3.0)", True),
        ("x IN [1.0, 2.0)", "x = 2.0", False),
        ("x IN (1.0, 2.0]", "x = 2.0", True),
        ("x IN (1.0, 2.0]", "x = 1.0", False),
        ("x IN [1.0, 2.0)", "x = 1.0", True),
        ("x IN [3.0, 3.0]", "x = 3.0", True),
        ("float x < 1e0", "float x >= 1e0", False),
        ("float x <= 1e0", "float x >= 1e0", True),
        # int: discrete, so (3, 5) is {4}
        ("x IN (3, 5)", "x = 4", True),
        ("x IN (3, 5)", "x = 3", False),
        ("x IN (3, 5)", "x = 5", False),
        ("x < 5", "x > 4", False),
        ("x < 5", "x >= 4", True),
        ("x IN [1, 2)", "x IN (1, 3]", False),
        # date: discrete by days
        ("d < DATE '2026-12-01'", "d >= DATE '2026-11-30'", True),
        ("d < DATE '2026-12-01'", "d > DATE '2026-11-30'", False),
        ("d IN (DATE '2026-11-30', DATE '2026-12-02')", "d = DATE '2026-12-01'", True),
        # timestamp: dense
        (
            "t < TIMESTAMP '2026-11-20T10:00:00Z'",
            "t >= TIMESTAMP '2026-11-20T10:00:00Z'",
            False,
        ),
        (
            "t <= TIMESTAMP '2026-11-20T10:00:00Z'",
            "t >= TIMESTAMP '2026-11-20 11:00:00+01:00'",
            True,
        ),
        # string: dense, by code point ('Z' < 'a')
        ("s < 'b'", "s >= 'b'", False),
        ("s < 'b'", "s > 'a'", True),
        ("s = 'Zebra'", "s < 'apple'", True),
        ("s = 'it''s'", "s = 'it''s'", True),
        ("s = 'its'", "s = 'it''s'", False),
        # wildcards intersect everything of their type
        ("int x = *", "x = 5", True),
        ("string s = *", "s < 'a'", True),
    ],
)
def test_ordered_intersection_both_ways(p, q, expected):
    assert matches(p, q) is expected
    assert matches(q, p) is expected


def test_prefixed_and_inferred_types_are_distinct_attributes():
    assert matches("int x = 5", "x = 5") is True
    assert matches("int x = 5", "double x = 5.0") is False
    assert matches("decimal x = 5", "x = 5") is False
    assert matches("decimal x = 5", "x = 5.0") is True
    assert matches("float x = 5", "float x = 5.0") is True


def test_a_decimal_literal_on_a_float_attribute_compares_as_float():
    assert matches("float x = 0.5", "float x IN (0.25, 1e0)") is True


# -- points (SPEC 3.2) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "q", "expected"),
    [
        ("p = POINT(1, 2)", "p = POINT(1.0, 2e0)", True),
        ("p = POINT(1, 2)", "p = POINT(2, 1)", False),
        ("p = POINT(1, 1)", "point p WITHIN BOX(0, 0, 2, 2)", True),
        ("p = POINT(2, 1)", "point p WITHIN BOX(0, 0, 2, 2)", True),  # on an edge
        ("p = POINT(2, 2)", "point p WITHIN BOX(0, 0, 2, 2)", True),  # on a corner
        ("p = POINT(2.5, 1)", "point p WITHIN BOX(0, 0, 2, 2)", False),
        ("point p WITHIN BOX(0, 0, 1, 1)", "point p WITHIN BOX(1, 1, 2, 2)", True),  # touching
        ("point p WITHIN BOX(0, 0, 1, 1)", "point p WITHIN BOX(1.5, 0, 2, 1)", False),
        ("point p = *", "p = POINT(7, 7)", True),
        ("p = POINT(0, 0)", "b = BOX(0, 0, 0, 0)", False),  # a point is not a box
    ],
)
def test_point_intersection_both_ways(p, q, expected):
    assert matches(p, q) is expected
    assert matches(q, p) is expected


# -- boxes: every cell of the SPEC 3.2 table, with a match and a non-match where one exists --

A = Box(0, 0, 2, 2)
INSIDE = Box(0.5, 0.5, 1.5, 1.5)
TOUCHING = Box(2, 2, 3, 3)  # shares only the corner (2, 2) with A
APART = Box(5, 5, 6, 6)
STRADDLING = Box(1, 1, 3, 3)

BOX_TABLE = [
    # = A / = B: A equals B
    (BoxEq(A), BoxEq(Box(0, 0, 2, 2)), True),
    (BoxEq(A), BoxEq(INSIDE), False),
    # = A / OVERLAPS B: A and B share a point (touching counts)
    (BoxEq(A), BoxOverlaps(TOUCHING), True),
    (BoxEq(A), BoxOverlaps(APART), False),
    # = A / CONTAINS B: A contains B (edges included)
    (BoxEq(A), BoxContains(Box(0, 0, 2, 1)), True),
    (BoxEq(A), BoxContains(STRADDLING), False),
    # = A / WITHIN B: A lies inside B (edges included)
    (BoxEq(INSIDE), BoxWithin(A), True),
    (BoxEq(A), BoxWithin(A), True),
    (BoxEq(STRADDLING), BoxWithin(A), False),
    # OVERLAPS / OVERLAPS, OVERLAPS / CONTAINS, CONTAINS / CONTAINS: always
    (BoxOverlaps(A), BoxOverlaps(APART), True),
    (BoxOverlaps(A), BoxContains(APART), True),
    (BoxContains(A), BoxContains(APART), True),
    # OVERLAPS A / WITHIN B: A and B share a point
    (BoxOverlaps(A), BoxWithin(TOUCHING), True),
    (BoxOverlaps(A), BoxWithin(APART), False),
    # CONTAINS A / WITHIN B: A lies inside B
    (BoxContains(INSIDE), BoxWithin(A), True),
    (BoxContains(A), BoxWithin(A), True),
    (BoxContains(STRADDLING), BoxWithin(A), False),
    # WITHIN A / WITHIN B: A and B share a point
    (BoxWithin(A), BoxWithin(TOUCHING), True),
    (BoxWithin(A), BoxWithin(APART), False),
]


@pytest.mark.parametrize(("p", "q", "expected"), BOX_TABLE)
def test_box_table_cell_both_ways(p, q, expected):
    assert predicates_intersect(Type.BOX, p, q) is expected
    assert predicates_intersect(Type.BOX, q, p) is expected


@pytest.mark.parametrize(("p", "q", "expected"), BOX_TABLE)
def test_box_table_cell_through_text(p, q, expected):
    # the same cells, written as constraints and matched as publication and subscription
    attr = Attribute("b", Type.BOX)
    p_text, q_text = predicate_text(attr, p), predicate_text(attr, q)

    assert matches(p_text, q_text) is expected
    assert matches(q_text, p_text) is expected


@pytest.mark.parametrize(
    "q", [BoxEq(A), BoxOverlaps(APART), BoxContains(A), BoxWithin(INSIDE), Wildcard()]
)
def test_a_box_wildcard_intersects_every_box_predicate(q):
    assert predicates_intersect(Type.BOX, Wildcard(), q) is True
    assert predicates_intersect(Type.BOX, q, Wildcard()) is True


@pytest.mark.parametrize(
    ("p", "q", "expected"),
    [
        # degenerate boxes: a point-like box and a line
        ("b = BOX(2, 2, 2, 2)", "b WITHIN BOX(0, 0, 2, 2)", True),
        ("b = BOX(2, 2, 2, 2)", "b OVERLAPS BOX(0, 0, 2, 2)", True),
        ("b = BOX(2.5, 2, 2.5, 2)", "b OVERLAPS BOX(0, 0, 2, 2)", False),
        ("b = BOX(0, 1, 3, 1)", "b OVERLAPS BOX(1, 0, 2, 2)", True),
        ("b = BOX(0, 1, 3, 1)", "b WITHIN BOX(1, 0, 2, 2)", False),
        ("b CONTAINS BOX(1, 1, 1, 1)", "b WITHIN BOX(1, 1, 1, 1)", True),
        # corners are normalized, so these are the same box
        ("b = BOX(2, 2, 0, 0)", "b = BOX(0, 2, 2, 0)", True),
        # touching along an edge
        ("b = BOX(0, 0, 1, 1)", "b OVERLAPS BOX(1, 0, 2, 1)", True),
        ("b = BOX(0, 0, 1, 1)", "b OVERLAPS BOX(1.0000001, 0, 2, 1)", False),
    ],
)
def test_box_edge_cases_both_ways(p, q, expected):
    assert matches(p, q) is expected
    assert matches(q, p) is expected


def test_point_predicates_directly():
    b = Box(0, 0, 1, 1)

    assert predicates_intersect(Type.POINT, PointEq(Point(1, 0)), PointWithin(b)) is True
    assert predicates_intersect(Type.POINT, PointWithin(b), PointEq(Point(1, 1.5))) is False
    assert predicates_intersect(Type.POINT, Wildcard(), PointEq(Point(9, 9))) is True
