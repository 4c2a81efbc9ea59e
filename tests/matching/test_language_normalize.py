"""SPEC 2.4: negation pushed down, DNF, same-attribute merging, dedup; observed as canonical text."""

from decimal import Decimal

import pytest

from matching import Attribute, Interval, Type, parse, to_lines, to_text


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        # 1. NOT pushed down, atoms complemented
        ("NOT int x < 2", ["x >= 2"]),
        ("NOT x < 2.0", ["x >= 2.0"]),
        ("NOT x <= 2.0", ["x > 2.0"]),
        ("NOT x = 5", ["x <= 4", "x >= 6"]),
        ("NOT x = 5.0", ["x < 5.0", "x > 5.0"]),
        ("NOT x BETWEEN 1 AND 9", ["x <= 0", "x >= 10"]),
        ("NOT x BETWEEN 1.0 AND 9.0", ["x < 1.0", "x > 9.0"]),
        ("NOT x IN [1.0, 9.0)", ["x < 1.0", "x >= 9.0"]),
        ("NOT x IN (1.0, 9.0]", ["x <= 1.0", "x > 9.0"]),
        ("NOT x IN (1, 9)", ["x <= 1", "x >= 9"]),
        ("NOT x != 5", ["x = 5"]),
        ("NOT NOT x = 5", ["x = 5"]),
        ("NOT s > ''", ["s = ''"]),
        ("s != ''", ["s > ''"]),
        ("NOT d < DATE '2026-01-01'", ["d >= DATE '2026-01-01'"]),
        # De Morgan
        ("NOT (x < 2 OR y > 3)", ["x >= 2 AND y <= 3"]),
        ("NOT (x < 2 AND y > 3)", ["x >= 2", "y <= 3"]),
        ("NOT (x = 1 AND NOT y = 2)", ["x <= 0", "x >= 2", "y = 2"]),
        # 2. DNF, AND binding tighter than OR, in source order
        ("x = 1 OR y = 2 AND z = 3", ["x = 1", "y = 2 AND z = 3"]),
        ("(x = 1 OR y = 2) AND z = 3", ["x = 1 AND z = 3", "y = 2 AND z = 3"]),
        (
            "(a = 1 OR a = 2) AND (b = 1 OR b = 2)",
            ["a = 1 AND b = 1", "a = 1 AND b = 2", "a = 2 AND b = 1", "a = 2 AND b = 2"],
        ),
        # 3. same-attribute intervals merge into their intersection
        ("x > 1.0 AND x <= 3.0", ["x IN (1.0, 3.0]"]),
        ("x > 1 AND x <= 3", ["x BETWEEN 2 AND 3"]),
        ("x >= 1 AND x <= 1", ["x = 1"]),
        ("x < 5.0 AND x < 4.0 AND x <= 4.0", ["x < 4.0"]),
        ("x BETWEEN 1.0 AND 5.0 AND x IN (0.0, 2.0)", ["x IN [1.0, 2.0)"]),
        ("int x = * AND x = 5", ["x = 5"]),
        ("int x = * AND int x = *", ["int x = *"]),
        ("x > 1 AND y = 2 AND x < 9", ["x BETWEEN 2 AND 8 AND y = 2"]),
        # ... and a disjunct whose merge is empty is dropped
        ("(x < 1 AND x > 2) OR y = 1", ["y = 1"]),
        ("x != 5 AND x BETWEEN 5 AND 6", ["x = 6"]),
        # 4. duplicates removed, first occurrence kept (predicate order does not matter)
        ("x = 1 OR y = 2 OR x = 1", ["x = 1", "y = 2"]),
        ("(x = 1 AND y = 2) OR (y = 2 AND x = 1)", ["x = 1 AND y = 2"]),
        ("x < 5 OR x <= 4", ["x <= 4"]),
    ],
)
def test_normal_form(text, lines):
    assert to_lines(parse(text)) == lines


def test_different_types_of_one_name_do_not_merge():
    constraint = parse("int x > 1 AND decimal x < 1")

    assert constraint.disjuncts[0].items == (
        (Attribute("x", Type.INT), Interval(2, True, None, False)),
        (Attribute("x", Type.DECIMAL), Interval(None, False, Decimal(1), False)),
    )


def test_disjunct_equality_ignores_predicate_order_but_keeps_it_for_printing():
    a, b = parse("x = 1 AND y = 2"), parse("y = 2 AND x = 1")

    assert a == b
    assert to_text(a) == "x = 1 AND y = 2"
    assert to_text(b) == "y = 2 AND x = 1"


def test_normalizing_twice_changes_nothing():
    constraint = parse("NOT (x BETWEEN 1 AND 9 AND y IN (1.0, 2.0]) OR z != 'a'")
    text = to_text(constraint)

    assert parse(text) == constraint
    assert to_text(parse(text)) == text
