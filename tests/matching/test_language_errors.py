"""SPEC 2.4: every error, with its code, its exact position and a message that says what to do."""

import pytest

from matching import ConstraintError, Type, parse

LONG_OR = " OR ".join(f"x = {i}" for i in range(65))
PAIRS_30 = " AND ".join(f"(a{i} = 1 OR a{i} = 2)" for i in range(30))


@pytest.mark.parametrize(
    ("text", "code", "position", "phrase"),
    [
        # syntax: the position is where the parser stopped understanding
        ("x <", "syntax", 3, "expected a value after '<', such as 5, 1.00"),
        ("x < 5 AND", "syntax", 9, "expected a condition such as lot >= 1000"),
        ("(x = 1", "syntax", 6, "expected ')' to close the '(' at character 0"),
        ("x = 1)", "syntax", 5, "this ')' closes no '('"),
        ("x = 1 y = 2", "syntax", 6, "expected AND, OR or the end"),
        ("x 5", "syntax", 2, "expected an operator after x"),
        ("x == 1", "syntax", 3, "equality is a single '='"),
        ("x NOT IN [1, 2]", "syntax", 2, "write NOT before the condition"),
        ("x BETWEEN 1 9", "syntax", 12, "expected AND after x BETWEEN"),
        ("x IN 1, 2", "syntax", 5, "expected an interval after IN"),
        ("x IN [1 2]", "syntax", 8, "expected ','"),
        ("x IN [1, 2}", "syntax", 10, "unexpected character '}'"),
        ("x = 'abc", "syntax", 4, "this string is never closed"),
        ('"abc = 1', "syntax", 0, "this quoted name is never closed"),
        ('"" = 1', "syntax", 0, "an attribute name cannot be empty"),
        ("x = 5.", "syntax", 4, "digits are needed on both sides of the point"),
        ("x = .5", "syntax", 4, "digits are needed on both sides of the point"),
        ("x = 1e", "syntax", 4, "an exponent needs digits"),
        ("x = 5AND y = 1", "syntax", 4, "put a space between a number and the word"),
        ("x = - 5", "syntax", 4, "a minus sign must be followed directly by digits"),
        ("x ! 5", "syntax", 2, "did you mean '!='"),
        ("x = +5", "syntax", 4, "write positive numbers without a sign"),
        ('{"x": 1}', "syntax", 0, "the JSON form must be sent as a JSON object"),
        ("date = 1", "syntax", 5, "expected an attribute name after the type date"),
        ("between = 1", "syntax", 0, 'put it in double quotes: "between"'),
        ("x = DATE 5", "syntax", 9, "expected a quoted date after DATE"),
        ("p = POINT(1)", "syntax", 11, "expected ','"),
        ("p = POINT(1, 'a')", "syntax", 13, "expected a number in POINT(x, y)"),
        ("b = BOX(0, 0, 1)", "syntax", 15, "it takes 4 numbers"),
        ("x < *", "syntax", 4, "'*' (any value) is only written as x = *"),
        ("x = 1\x00", "syntax", 5, "unexpected character U+0000"),
        # literals
        ("x = 9223372036854775808", "bad_literal", 4, "ints go from -9223372036854775808"),
        ("x = -9223372036854775809", "bad_literal", 4, "out of range"),
        ("x = DATE '2026-02-30'", "bad_literal", 4, "is not a valid date"),
        ("x = DATE '26-02-03'", "bad_literal", 4, "write DATE 'YYYY-MM-DD'"),
        ("x = TIMESTAMP '2026-11-20T25:00:00Z'", "bad_literal", 4, "is not a valid timestamp"),
        ("x = TIMESTAMP '2026-11-20'", "bad_literal", 4, "YYYY-MM-DDTHH:MM:SS"),
        ("x = 1e400", "bad_literal", 4, "too large for a float"),
        ("p = POINT(1e400, 0)", "bad_literal", 10, "the coordinate 1e400 is too large"),
        ("x = 1e-400", "bad_literal", 4, "too close to zero for a float"),
        ("s = 'a\x00b'", "bad_literal", 4, "cannot contain the NUL character"),
        # types
        ("int x = 1.5", "type_mismatch", 8, "x is an int attribute, so it needs a whole number"),
        ("decimal x = 1.5e3", "type_mismatch", 12, "write the number without an exponent, as 1500"),
        ("int x = 'a'", "type_mismatch", 8, "not a string like 'a'"),
        ("string s = 5", "type_mismatch", 11, "a string such as 'pencils'"),
        ("date d = '2026-11-20'", "type_mismatch", 9, "a date such as DATE '2026-11-20'"),
        ("timestamp t = DATE '2026-11-20'", "type_mismatch", 14, "a timestamp such as"),
        ("x BETWEEN 1 AND 'a'", "type_mismatch", 16, "1 is an int, 'a' is a string"),
        ("x IN [DATE '2026-01-01', 5]", "type_mismatch", 25, "is a date, 5 is an int"),
        ("int x = POINT(1, 2)", "type_mismatch", 8, "a whole number such as 42"),
        ("b WITHIN 5", "type_mismatch", 9, "WITHIN needs a box such as BOX(0, 0, 1, 1)"),
        ("lot = *", "needs_type_prefix", 0, "write for example int lot = *"),
        ("int x WITHIN BOX(0, 0, 1, 1)", "bad_operator", 6, "WITHIN is for point and box"),
        ("point p OVERLAPS BOX(0, 0, 1, 1)", "bad_operator", 8, "a point attribute takes"),
        ("b < BOX(0, 0, 1, 1)", "bad_operator", 2, "a box attribute takes"),
        # empty ranges: at the predicate
        ("x > 1 AND y BETWEEN 5 AND 1", "empty_range", 10, "perhaps y BETWEEN 1 AND 5"),
        ("int x IN (3, 4)", "empty_range", 0, "contains no int value"),
        ("x IN (3.0, 3.0)", "empty_range", 0, "contains no decimal value"),
        ("x IN [3.0, 3.0)", "empty_range", 0, "contains no decimal value"),
        ("d IN (DATE '2026-01-01', DATE '2026-01-02')", "empty_range", 0, "no date value"),
        ("x > 9223372036854775807", "empty_range", 0, "contains no int value"),
        ("s < ''", "empty_range", 0, "contains no string value"),
        # negation
        ("NOT int x = *", "cannot_negate", 4, "cannot negate a wildcard"),
        ("x = 1 AND NOT (y = 2 AND int z = *)", "cannot_negate", 25, "cannot negate a wildcard"),
        ("x != *", "cannot_negate", 0, "cannot negate a wildcard"),
        ("NOT x >= -9223372036854775808", "cannot_negate", 4, "it allows every value"),
        ("NOT b WITHIN BOX(0, 0, 1, 1)", "cannot_negate", 4, "cannot negate WITHIN on b"),
        ("NOT b OVERLAPS BOX(0, 0, 1, 1)", "cannot_negate", 4, "cannot negate OVERLAPS"),
        ("NOT b CONTAINS BOX(0, 0, 1, 1)", "cannot_negate", 4, "cannot negate CONTAINS"),
        ("NOT point p WITHIN BOX(0, 0, 1, 1)", "cannot_negate", 4, "cannot negate WITHIN on p"),
        ("NOT b = BOX(0, 0, 1, 1)", "cannot_negate", 4, "equality on the box attribute b"),
        ("NOT p = POINT(0, 0)", "cannot_negate", 4, "equality on the point attribute p"),
        ("p != POINT(0, 0)", "cannot_negate", 0, "equality on the point attribute p"),
        # one condition per point/box attribute and disjunct: at the second one
        (
            "b = BOX(0, 0, 1, 1) AND b OVERLAPS BOX(0, 0, 1, 1)",
            "duplicate_attribute",
            24,
            "b already has a condition in this alternative",
        ),
        (
            "(p = POINT(1, 1) OR q = 1) AND point p WITHIN BOX(0, 0, 1, 1)",
            "duplicate_attribute",
            31,
            "a point attribute takes one condition per alternative",
        ),
        # nothing left
        ("x = 1 AND x = 2", "unsatisfiable", 0, "no value can satisfy this constraint"),
        ("(x < 1 AND x > 2) OR (y = 'a' AND y = 'b')", "unsatisfiable", 0, "contradicts itself"),
        # limits
        (LONG_OR, "too_many_disjuncts", LONG_OR.index("x = 64"), "more than 64 alternatives"),
        (PAIRS_30, "too_many_disjuncts", PAIRS_30.index("(a6"), "more than 64 alternatives"),
        (
            " AND ".join(f"x{i} != {i}" for i in range(7)),
            "too_many_disjuncts",
            6 * len("x0 != 0 AND "),
            "!= counts as two",
        ),
        (
            "x = 0" + "".join(f" AND x{i} = 1" for i in range(1, 257)),
            "too_many_predicates",
            len("x = 0") + sum(len(f" AND x{i} = 1") for i in range(1, 256)) + len(" AND "),
            "at most 256 conditions",
        ),
        ("x = 1 OR " * 1111 + "x = 2", "too_long", 10_000, "at most 10,000 characters"),
        ("(" * 101 + "x = 1" + ")" * 101, "too_deep", 100, "nested more than 100 deep"),
    ],
)
def test_error_code_position_and_message(text, code, position, phrase):
    with pytest.raises(ConstraintError) as caught:
        parse(text)

    error = caught.value
    assert (error.code, error.position) == (code, position), error.message
    assert phrase in error.message
    assert error.path is None
    assert str(error) == f"{error.message} (at character {position})"


def test_thirty_ored_pairs_anded_fail_at_once_without_expanding():
    # 2**30 disjuncts would never finish; the count is known before any expansion
    with pytest.raises(ConstraintError) as caught:
        parse(PAIRS_30)

    assert caught.value.code == "too_many_disjuncts"


def test_sixty_four_disjuncts_are_allowed_and_the_count_is_taken_before_dedup():
    six_pairs = " AND ".join(f"(a{i} = 1 OR a{i} = 2)" for i in range(6))
    assert len(parse(six_pairs)) == 64

    # 65 copies of one disjunct would dedup to 1, but the limit counts before that
    with pytest.raises(ConstraintError) as caught:
        parse(" OR ".join(["x = 1"] * 65))
    assert caught.value.code == "too_many_disjuncts"


def test_a_long_chain_of_nots_is_not_a_recursion_problem():
    # 2,000 NOTs fit in 10,000 characters; an even number cancels out
    assert parse("NOT " * 2000 + "x = 1") == parse("x = 1")
    assert parse("NOT " * 1999 + "x = 1") == parse("x != 1")


def test_a_hundred_nested_parentheses_are_fine():
    assert parse("(" * 100 + "x = 1" + ")" * 100) == parse("x = 1")


def test_the_normalized_text_must_fit_the_length_limit_too():
    # each side is short, but the DNF repeats every long string 32 times
    long = "'" + "a" * 300 + "'"
    text = " AND ".join(f"(s{i} = {long} OR s{i} = 'b')" for i in range(5))

    with pytest.raises(ConstraintError) as caught:
        parse(text)

    assert caught.value.code == "too_long"
    assert caught.value.position == 0
    assert "once normalized" in caught.value.message


class TestInsideAMarket:
    SCHEMA = {"price": Type.DECIMAL, "lot": Type.INT}

    def test_a_prefix_that_disagrees_with_the_schema(self):
        with pytest.raises(ConstraintError) as caught:
            parse("lot > 1 AND float price < 2", schema=self.SCHEMA)

        assert (caught.value.code, caught.value.position) == ("type_mismatch", 12)
        assert caught.value.message == (
            "price is decimal in this market, not float: drop the prefix or write decimal price"
        )

    def test_a_literal_that_does_not_fit_the_schema_type(self):
        with pytest.raises(ConstraintError) as caught:
            parse("lot = 1.5", schema=self.SCHEMA)

        assert (caught.value.code, caught.value.position) == ("type_mismatch", 6)
        assert "lot is an int attribute" in caught.value.message

    def test_a_float_literal_for_a_decimal_attribute(self):
        with pytest.raises(ConstraintError) as caught:
            parse("price <= 1.1e0", schema=self.SCHEMA)

        assert (caught.value.code, caught.value.position) == ("type_mismatch", 9)
        assert "as 1.1" in caught.value.message


@pytest.mark.parametrize("source", [None, 5, 1.5, ["x = 1"], b"x = 1", True])
def test_anything_that_is_neither_text_nor_an_object_is_a_constraint_error(source):
    with pytest.raises(ConstraintError) as caught:
        parse(source)

    assert (caught.value.code, caught.value.path) == ("syntax", "")
