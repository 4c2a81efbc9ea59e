"""SPEC 2.1-2.3: what each piece of the text syntax parses to (values, types, predicates)."""

import datetime as dt
from decimal import Decimal

import pytest

from matching import (
    Attribute,
    Box,
    BoxContains,
    BoxEq,
    BoxOverlaps,
    BoxWithin,
    Constraint,
    Disjunct,
    Interval,
    Point,
    PointEq,
    PointWithin,
    Type,
    Wildcard,
    parse,
    parse_literal,
)

INT8_MIN, INT8_MAX = -(2**63), 2**63 - 1
UTC = dt.UTC


def single(text, **kwargs):
    """The one predicate of a one-predicate constraint, with its attribute."""
    constraint = parse(text, **kwargs)
    assert len(constraint.disjuncts) == 1
    ((attr, pred),) = constraint.disjuncts[0].items
    return attr, pred


def eq(value):
    return Interval(value, True, value, True)


@pytest.mark.parametrize(
    ("text", "attribute", "predicate"),
    [
        ("lot = 42", Attribute("lot", Type.INT), eq(42)),
        ("lot = -7", Attribute("lot", Type.INT), eq(-7)),
        ("price = 1.00", Attribute("price", Type.DECIMAL), eq(Decimal("1.00"))),
        ("price = -0.5", Attribute("price", Type.DECIMAL), eq(Decimal("-0.5"))),
        ("w = 1.5e3", Attribute("w", Type.FLOAT), eq(1500.0)),
        ("w = 2e0", Attribute("w", Type.FLOAT), eq(2.0)),
        ("w = 1e+16", Attribute("w", Type.FLOAT), eq(1e16)),
        ("w = 1E-3", Attribute("w", Type.FLOAT), eq(0.001)),
        ("d = DATE '2026-11-20'", Attribute("d", Type.DATE), eq(dt.date(2026, 11, 20))),
        (
            "t = TIMESTAMP '2026-11-20T10:00:00Z'",
            Attribute("t", Type.TIMESTAMP),
            eq(dt.datetime(2026, 11, 20, 10, tzinfo=UTC)),
        ),
        ("topic = 'pencils'", Attribute("topic", Type.STRING), eq("pencils")),
        ("p = POINT(1.5, 2)", Attribute("p", Type.POINT), PointEq(Point(1.5, 2.0))),
        ("b = BOX(0, 0, 1, 1)", Attribute("b", Type.BOX), BoxEq(Box(0.0, 0.0, 1.0, 1.0))),
    ],
)
def test_each_literal_kind_gives_its_type_and_value(text, attribute, predicate):
    assert single(text) == (attribute, predicate)


def test_float_literals_are_finite_and_only_zero_is_zero():
    assert single("w = 0.0e-400")[1] == eq(0.0)
    assert single("w = 5e-324")[1] == eq(5e-324)  # subnormal, as PostgreSQL accepts
    assert single("w = 1.7976931348623157e308")[1] == eq(1.7976931348623157e308)


def test_decimal_literals_keep_their_digits():
    _, pred = single("price = 1.10")

    assert str(pred.lo) == "1.10"
    assert str(single("decimal price = 5")[1].lo) == "5"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("t = TIMESTAMP '2026-11-20T10:00:00'", dt.datetime(2026, 11, 20, 10, tzinfo=UTC)),
        ("t = TIMESTAMP '2026-11-20 10:00:00'", dt.datetime(2026, 11, 20, 10, tzinfo=UTC)),
        ("t = TIMESTAMP '2026-11-20T10:00:00+01:30'", dt.datetime(2026, 11, 20, 8, 30, tzinfo=UTC)),
        ("t = TIMESTAMP '2026-11-20T23:30:00-01:00'", dt.datetime(2026, 11, 21, 0, 30, tzinfo=UTC)),
        (
            "t = TIMESTAMP '2026-11-20T10:00:00.25Z'",
            dt.datetime(2026, 11, 20, 10, 0, 0, 250000, tzinfo=UTC),
        ),
    ],
)
def test_timestamps_are_instants_in_utc_and_no_zone_means_utc(text, expected):
    _, pred = single(text)

    assert pred.lo == expected
    assert pred.lo.utcoffset() == dt.timedelta(0)


def test_strings_escape_quotes_by_doubling_them():
    assert single("s = 'it''s'")[1] == eq("it's")
    assert single("s = ''''")[1] == eq("'")
    assert single("s = 'two words, AND more'")[1] == eq("two words, AND more")


@pytest.mark.parametrize(
    ("text", "attribute"),
    [
        ('"date" = 1', Attribute("date", Type.INT)),
        ('"unit price" = 1.00', Attribute("unit price", Type.DECIMAL)),
        ('"say ""hi""" = 1', Attribute('say "hi"', Type.INT)),
        ("X = 1", Attribute("X", Type.INT)),
        ("_x9 = 1", Attribute("_x9", Type.INT)),
        ('int "AND" = 1', Attribute("AND", Type.INT)),
    ],
)
def test_attribute_names_plain_and_quoted(text, attribute):
    assert single(text)[0] == attribute


def test_names_are_case_sensitive_and_keywords_are_not():
    constraint = parse("x = 1 and X = 2")

    assert constraint == parse("x = 1 AND X = 2")
    assert set(constraint.disjuncts[0].mapping) == {
        Attribute("x", Type.INT),
        Attribute("X", Type.INT),
    }
    assert parse("x BeTwEeN 1 aNd 9 oR NoT y iN [1, 2]") == parse(
        "x BETWEEN 1 AND 9 OR NOT y IN [1, 2]"
    )


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        ("x = 5", Interval(5, True, 5, True)),
        ("x < 5", Interval(None, False, 4, True)),
        ("x <= 5", Interval(None, False, 5, True)),
        ("x > 5", Interval(6, True, None, False)),
        ("x >= 5", Interval(5, True, None, False)),
        ("x BETWEEN 1 AND 9", Interval(1, True, 9, True)),
        ("x IN [1, 9]", Interval(1, True, 9, True)),
        ("x IN [1, 9)", Interval(1, True, 8, True)),
        ("x IN (1, 9]", Interval(2, True, 9, True)),
        ("x IN (1, 9)", Interval(2, True, 8, True)),
        ("x IN (3, 5)", Interval(4, True, 4, True)),
        ("x BETWEEN 3 AND 3", Interval(3, True, 3, True)),
        ("int x = *", Wildcard()),
    ],
)
def test_int_predicates_are_closed_intervals(text, predicate):
    assert single(text)[1] == predicate


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        ("x < 5.0", Interval(None, False, Decimal("5.0"), False)),
        ("x >= 5.0", Interval(Decimal("5.0"), True, None, False)),
        ("x IN [1.0, 9.0)", Interval(Decimal("1.0"), True, Decimal("9.0"), False)),
        ("x IN (1.0, 9.0]", Interval(Decimal("1.0"), False, Decimal("9.0"), True)),
        ("x IN (1.0, 9.0)", Interval(Decimal("1.0"), False, Decimal("9.0"), False)),
        ("x IN [3.0, 3.0]", Interval(Decimal("3.0"), True, Decimal("3.0"), True)),
        ("decimal x = *", Wildcard()),
    ],
)
def test_dense_predicates_keep_open_and_closed_bounds(text, predicate):
    assert single(text)[1] == predicate


def test_date_bounds_move_by_days():
    _, pred = single("d IN (DATE '2026-11-30', DATE '2026-12-31')")

    assert pred == Interval(dt.date(2026, 12, 1), True, dt.date(2026, 12, 30), True)
    assert single("d < DATE '2027-01-01'")[1] == Interval(None, False, dt.date(2026, 12, 31), True)


def test_int_bounds_at_the_int8_edge_are_unbounded():
    assert single(f"x >= {INT8_MIN}")[1] == Wildcard()
    assert single(f"x <= {INT8_MAX}")[1] == Wildcard()
    assert single(f"x = {INT8_MAX}")[1] == Interval(INT8_MAX, True, None, False)
    assert single(f"x = {INT8_MIN}")[1] == Interval(None, False, INT8_MIN, True)
    assert single(f"x > {INT8_MIN}")[1] == Interval(INT8_MIN + 1, True, None, False)
    assert single(f"x < {INT8_MAX}")[1] == Interval(None, False, INT8_MAX - 1, True)


def test_date_bounds_at_the_calendar_edge_are_unbounded():
    assert single("d >= DATE '0001-01-01'")[1] == Wildcard()
    assert single("d <= DATE '9999-12-31'")[1] == Wildcard()


def test_the_empty_string_is_the_smallest_string():
    assert single("s >= ''")[1] == Wildcard()
    assert single("s <= ''")[1] == Interval(None, False, "", True)
    assert single("s = ''")[1] == Interval(None, False, "", True)
    assert single("s > ''")[1] == Interval("", False, None, False)


def test_not_equal_is_two_disjuncts():
    x = Attribute("x", Type.INT)

    assert parse("x != 5") == Constraint(
        (
            Disjunct(((x, Interval(None, False, 4, True)),)),
            Disjunct(((x, Interval(6, True, None, False)),)),
        )
    )
    assert parse("x <> 5") == parse("x != 5")


@pytest.mark.parametrize(
    ("text", "attribute", "predicate"),
    [
        (
            "point p WITHIN BOX(0, 0, 1, 1)",
            Attribute("p", Type.POINT),
            PointWithin(Box(0, 0, 1, 1)),
        ),
        ("b WITHIN BOX(0, 0, 1, 1)", Attribute("b", Type.BOX), BoxWithin(Box(0, 0, 1, 1))),
        ("b OVERLAPS BOX(0, 0, 1, 1)", Attribute("b", Type.BOX), BoxOverlaps(Box(0, 0, 1, 1))),
        ("b CONTAINS BOX(0, 0, 1, 1)", Attribute("b", Type.BOX), BoxContains(Box(0, 0, 1, 1))),
        ("box b = BOX(0, 0, 1, 1)", Attribute("b", Type.BOX), BoxEq(Box(0, 0, 1, 1))),
        ("point p = *", Attribute("p", Type.POINT), Wildcard()),
        ("box b = *", Attribute("b", Type.BOX), Wildcard()),
    ],
)
def test_geometric_predicates(text, attribute, predicate):
    assert single(text) == (attribute, predicate)


def test_box_corners_are_normalized_and_coordinates_may_be_negative():
    assert single("b = BOX(3, -1, -2.5, 4e0)")[1] == BoxEq(Box(-2.5, -1.0, 3.0, 4.0))


@pytest.mark.parametrize(
    ("text", "attribute"),
    [
        ("int x = 5", Attribute("x", Type.INT)),
        ("integer x = 5", Attribute("x", Type.INT)),
        ("decimal x = 5", Attribute("x", Type.DECIMAL)),
        ("numeric x = 5", Attribute("x", Type.DECIMAL)),
        ("float x = 5", Attribute("x", Type.FLOAT)),
        ("double x = 5.0", Attribute("x", Type.FLOAT)),
        ("date x = DATE '2026-01-01'", Attribute("x", Type.DATE)),
        ("timestamp x = TIMESTAMP '2026-01-01T00:00:00'", Attribute("x", Type.TIMESTAMP)),
        ("string x = 'a'", Attribute("x", Type.STRING)),
        ("text x = 'a'", Attribute("x", Type.STRING)),
        ("point x = POINT(0, 0)", Attribute("x", Type.POINT)),
        ("box x = BOX(0, 0, 1, 1)", Attribute("x", Type.BOX)),
        ("INT x = 5", Attribute("x", Type.INT)),
    ],
)
def test_every_type_prefix(text, attribute):
    assert single(text)[0] == attribute


def test_prefix_versus_inferred_type():
    # int x = 5 and double x = 5.0 constrain two attributes named x
    constraint = parse("int x = 5 AND double x = 5.0")

    assert constraint.disjuncts[0].items == (
        (Attribute("x", Type.INT), eq(5)),
        (Attribute("x", Type.FLOAT), eq(5.0)),
    )


def test_a_decimal_literal_fits_a_float_attribute():
    assert single("float x = 0.1") == (Attribute("x", Type.FLOAT), eq(0.1))


def test_an_int_literal_fits_a_decimal_and_a_float_attribute():
    assert single("decimal x = 5") == (Attribute("x", Type.DECIMAL), eq(Decimal(5)))
    assert single("float x = 5") == (Attribute("x", Type.FLOAT), eq(5.0))
    # beyond int8 is fine for a decimal
    assert single("decimal x = 99999999999999999999")[1] == eq(Decimal("99999999999999999999"))


def test_mixed_numeric_literals_widen_to_the_wider_type():
    assert single("x BETWEEN 1 AND 2.5") == (
        Attribute("x", Type.DECIMAL),
        Interval(Decimal(1), True, Decimal("2.5"), True),
    )
    assert single("x IN (1.5, 1e1]") == (
        Attribute("x", Type.FLOAT),
        Interval(1.5, False, 10.0, True),
    )


class TestInsideAMarket:
    SCHEMA = {
        "price": Type.DECIMAL,
        "lot": Type.INT,
        "weight": Type.FLOAT,
        "delivery": Type.DATE,
        "site": Type.POINT,
        "topic": Type.STRING,
    }

    def test_an_unprefixed_attribute_takes_the_schema_type(self):
        assert single("price = 1", schema=self.SCHEMA) == (
            Attribute("price", Type.DECIMAL),
            eq(Decimal(1)),
        )
        assert single("weight = 2", schema=self.SCHEMA)[0] == Attribute("weight", Type.FLOAT)

    def test_a_wildcard_needs_no_prefix(self):
        assert single("lot = *", schema=self.SCHEMA) == (Attribute("lot", Type.INT), Wildcard())

    def test_a_point_needs_no_prefix_for_within(self):
        assert single("site WITHIN BOX(0, 0, 1, 1)", schema=self.SCHEMA) == (
            Attribute("site", Type.POINT),
            PointWithin(Box(0, 0, 1, 1)),
        )

    def test_a_prefix_that_agrees_is_accepted(self):
        assert single("decimal price = 1", schema=self.SCHEMA)[0] == Attribute(
            "price", Type.DECIMAL
        )
        assert single("numeric price = 1", schema=self.SCHEMA)[0] == Attribute(
            "price", Type.DECIMAL
        )

    def test_attributes_outside_the_schema_are_typed_as_outside_a_market(self):
        # membership ("unknown attribute") is the exchange's check, not the parser's
        assert single("colour = 'red'", schema=self.SCHEMA)[0] == Attribute("colour", Type.STRING)


@pytest.mark.parametrize(
    ("text", "type_", "expected"),
    [
        ("1.00", Type.DECIMAL, Decimal("1.00")),
        ("42", Type.DECIMAL, Decimal(42)),
        ("42", Type.INT, 42),
        ("1e3", Type.FLOAT, 1000.0),
        ("'x'", Type.STRING, "x"),
        ("DATE '2026-11-20'", Type.DATE, dt.date(2026, 11, 20)),
        ("'2026-11-20'", Type.DATE, dt.date(2026, 11, 20)),
        ("'2026-11-20T10:00:00Z'", Type.TIMESTAMP, dt.datetime(2026, 11, 20, 10, tzinfo=UTC)),
        ("POINT(1, 2)", Type.POINT, Point(1.0, 2.0)),
        ("BOX(1, 1, 0, 0)", Type.BOX, Box(0.0, 0.0, 1.0, 1.0)),
    ],
)
def test_parse_literal(text, type_, expected):
    assert parse_literal(text, type_) == expected
