"""SPEC 2.5: the canonical text, and that it parses back to the same constraint."""

import datetime as dt
from decimal import Decimal

import pytest

from matching import (
    Attribute,
    Constraint,
    Disjunct,
    Interval,
    Type,
    Wildcard,
    parse,
    to_lines,
    to_text,
)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("x=5", "x = 5"),
        ("x<>5", "x <= 4 OR x >= 6"),
        ("x IN [1, 9]", "x BETWEEN 1 AND 9"),
        ("x < 5", "x <= 4"),
        ("x IN [1.0, 9.0]", "x BETWEEN 1.0 AND 9.0"),
        ("x IN [1.0, 9.0)", "x IN [1.0, 9.0)"),
        ("x IN (1.0, 9.0]", "x IN (1.0, 9.0]"),
        ("x IN (1.0, 9.0)", "x IN (1.0, 9.0)"),
        ("x < 1.0", "x < 1.0"),
        ("x <= 1.0", "x <= 1.0"),
        ("x > 1.0", "x > 1.0"),
        ("x >= 1.0", "x >= 1.0"),
        ("x IN [2.5, 2.5]", "x = 2.5"),
        ("d < DATE '2026-01-01'", "d <= DATE '2025-12-31'"),
        ("t > TIMESTAMP '2026-01-01 01:00:00+01:00'", "t > TIMESTAMP '2026-01-01T00:00:00Z'"),
        (
            "t = TIMESTAMP '2026-01-01T00:00:00.000123'",
            "t = TIMESTAMP '2026-01-01T00:00:00.000123Z'",
        ),
        ("s = 'it''s'", "s = 'it''s'"),
        ("s <= ''", "s = ''"),
        # type prefixes only where the text alone would infer another type
        ("integer x = *", "int x = *"),
        ("decimal x = 5", "decimal x = 5"),
        ("decimal x BETWEEN 1 AND 2.5", "x BETWEEN 1 AND 2.5"),
        ("double x = 5.0", "float x = 5.0"),
        ("float x = 5", "float x = 5.0"),
        ("float x = 1e16", "x = 1e+16"),
        ("float x BETWEEN 0.5 AND 1e16", "x BETWEEN 0.5 AND 1e+16"),
        ("float x = 0.1", "float x = 0.1"),
        ("text s = 'a'", "s = 'a'"),
        ("p = POINT(1, 2)", "p = POINT(1.0, 2.0)"),
        ("point p WITHIN BOX(0, 0, 1, 1)", "point p WITHIN BOX(0.0, 0.0, 1.0, 1.0)"),
        ("b = BOX(1, 1, 0, 0)", "b = BOX(0.0, 0.0, 1.0, 1.0)"),
        ("b OVERLAPS BOX(0, 0, 1e20, 1)", "b OVERLAPS BOX(0.0, 0.0, 1e+20, 1.0)"),
        ("box b CONTAINS BOX(0, 0, 1, 1)", "b CONTAINS BOX(0.0, 0.0, 1.0, 1.0)"),
        ("box b = *", "box b = *"),
        # names: quoted when not a plain word or when a keyword
        ('"unit price" = 1.00', '"unit price" = 1.00'),
        ('"date" = 1', '"date" = 1'),
        ('"And" = 1', '"And" = 1'),
        ('"say ""hi""" = 1', '"say ""hi""" = 1'),
        ('"plain" = 1', "plain = 1"),
        # disjuncts: parenthesized only when they have more than one predicate
        ("x = 1 OR y = 2 AND z = 3", "x = 1 OR (y = 2 AND z = 3)"),
        ("(x = 1 AND y = 2)", "x = 1 AND y = 2"),
    ],
)
def test_canonical_text(text, canonical):
    constraint = parse(text)

    assert to_text(constraint) == canonical
    assert parse(canonical) == constraint


def test_decimals_print_without_an_exponent():
    constraint = Constraint(
        (Disjunct(((Attribute("x", Type.DECIMAL), Interval(Decimal("1E+3"), True, None, False)),)),)
    )

    assert to_text(constraint) == "decimal x >= 1000"


def test_values_at_the_edges_of_their_domain_round_trip():
    for text in [
        "x >= 9223372036854775807",
        "x <= -9223372036854775808",
        "d >= DATE '9999-12-31'",
        "d <= DATE '0001-01-01'",
        "t < TIMESTAMP '0001-01-01T00:00:00Z'",
        "float x = 1.7976931348623157e308",
        "float x = 5e-324",
        "float x = -0.0",
    ]:
        constraint = parse(text)
        assert parse(to_text(constraint)) == constraint, text


def test_a_constraint_built_by_hand_prints_and_parses_back():
    constraint = Constraint(
        (
            Disjunct(
                (
                    (
                        Attribute("when", Type.DATE),
                        Interval(dt.date(2026, 1, 1), True, None, False),
                    ),
                    (Attribute("lot", Type.INT), Wildcard()),
                )
            ),
            Disjunct(((Attribute("text", Type.STRING), Interval("a", False, "b", False)),)),
        )
    )

    text = to_text(constraint)

    assert text == "(when >= DATE '2026-01-01' AND int lot = *) OR \"text\" IN ('a', 'b')"
    assert parse(text) == constraint


def test_to_lines_gives_one_disjunct_per_line():
    constraint = parse(
        "(lot BETWEEN 1000 AND 4999 AND price = 1.00) OR (lot >= 5000 AND price = 0.90) OR x != 1"
    )

    assert to_lines(constraint) == [
        "lot BETWEEN 1000 AND 4999 AND price = 1.00",
        "lot >= 5000 AND price = 0.90",
        "x <= 0",
        "x >= 2",
    ]
    assert [parse(line) for line in to_lines(constraint)] == [
        Constraint((d,)) for d in constraint.disjuncts
    ]
