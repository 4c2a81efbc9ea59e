"""Bounded work per constraint (issue 15): a literal or a nesting that would cost CPU or memory
out of proportion is refused, with a position, before anything expands it.

The tests count work instead of timing it: the conversions of ``matching.values`` are replaced by
spies that fail the test if a refused literal ever reaches them, and the deep nestings are far
deeper than Python's recursion limit, so a parser that recursed on them would raise
RecursionError instead of the ConstraintError asserted here.
"""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matching import (
    Constraint,
    ConstraintError,
    Type,
    jsonform,
    parse,
    parser,
    syntax,
    to_text,
    values,
)

MARKET = {"price": Type.DECIMAL, "lot": Type.INT, "w": Type.FLOAT, "p": Type.POINT}

OUT_OF_RANGE = (
    "is out of range: numbers go up to 1e400 in size and down to 1e-440 in precision "
    "(floats go from about 5e-324 to about 1.8e308)"
)
TOO_MANY_DIGITS = "has too many digits: a number may have at most 40 significant digits"


@pytest.fixture
def no_conversion(monkeypatch):
    """Fails the test if a literal reaches a conversion, or ``matching.values`` builds a
    Decimal or a float."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"a refused literal was converted: {str(args)[:60]}")

    monkeypatch.setattr(values, "Decimal", refuse)
    monkeypatch.setattr(values, "float", refuse, raising=False)
    for module in (syntax, parser):
        monkeypatch.setattr(module, "convert", refuse)
    for module in (parser, jsonform):
        monkeypatch.setattr(module, "coordinate", refuse)


BIG = "1" + "0" * 9_990  # as long as the text limit allows
TINY = "0." + "0" * 9_000 + "1"


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("price <= 1e999999999", 9, f"1e999999999 {OUT_OF_RANGE}"),
        ("price <= 1e-999999999", 9, f"1e-999999999 {OUT_OF_RANGE}"),
        ("w >= -1e9999999999999", 5, f"-1e9999999999999 {OUT_OF_RANGE}"),
        ("lot = 1e401", 6, f"1e401 {OUT_OF_RANGE}"),
        ("price = 1e-441", 8, f"1e-441 {OUT_OF_RANGE}"),
        ("price = " + BIG, 8, f"{BIG[:30]}... (9,991 characters) {OUT_OF_RANGE}"),
        ("lot = " + BIG, 6, f"{BIG[:30]}... (9,991 characters) {OUT_OF_RANGE}"),
        ("price = " + TINY, 8, f"{TINY[:30]}... (9,003 characters) {OUT_OF_RANGE}"),
        ("price = 1" + "0" * 40, 8, f"{'1' + '0' * 29}... (41 characters) {TOO_MANY_DIGITS}"),
        ("price = 0.00" + "1" * 41, 8, f"{'0.00' + '1' * 26}... (45 characters) {TOO_MANY_DIGITS}"),
        ("price BETWEEN 1 AND 1e999999", 20, f"1e999999 {OUT_OF_RANGE}"),
        ("price IN [1e-99999999, 2)", 10, f"1e-99999999 {OUT_OF_RANGE}"),
        ("p = POINT(1e999999999, 0)", 10, f"1e999999999 {OUT_OF_RANGE}"),
        ("p WITHIN BOX(9e99999, 0, 1, 1)", 13, f"9e99999 {OUT_OF_RANGE}"),
    ],
)
def test_huge_and_tiny_numbers_are_refused_before_they_are_converted(
    no_conversion, text, position, message
):
    with pytest.raises(ConstraintError) as caught:
        parse(text, schema=MARKET)

    assert (caught.value.code, caught.value.position) == ("bad_literal", position)
    assert caught.value.message == message


def test_the_same_literals_without_a_market(no_conversion):
    # the bound is on the spelling, whatever type the attribute turns out to have
    for text in ["x <= 1e999999999", "decimal x = 1e-999999999", "int x = " + BIG]:
        with pytest.raises(ConstraintError) as caught:
            parse(text)
        assert caught.value.code == "bad_literal"


@pytest.mark.parametrize(
    ("source", "path", "start"),
    [
        ({"price": {"le": "1e999999999"}}, "/price/le", "1e999999999 is out of range"),
        ({"decimal x": {"eq": "1e-999999999"}}, "/decimal x/eq", "1e-999999999 is out"),
        ({"price": {"le": "1" + "0" * 1_000_000}}, "/price/le", "1000000000"),
        ({"price": {"ge": "0." + "0" * 1_000_000 + "1"}}, "/price/ge", "0.0000000000"),
        ({"int lot": {"eq": "1" + "0" * 1_000_000}}, "/int lot/eq", "1000000000"),
        ({"price": {"le": Decimal("1e999999999")}}, "/price/le", "1E+999999999 is out"),
        ({"price": {"le": Decimal("-1e-999999999")}}, "/price/le", "-1E-999999999 is out"),
        ({"w": {"eq": Decimal("0e-999999999")}}, "/w/eq", "0E-999999999 is out"),
        ({"price": {"eq": Decimal("1." + "0" * 40)}}, "/price/eq", "1.000000000"),
        ({"lot": {"eq": 10**1_000_000}}, "/lot/eq", "this number has too many digits"),
        ({"lot": {"eq": -(10**40)}}, "/lot/eq", "this number has too many digits"),
        ({"p": {"eq": {"point": ["1e999999999", 0]}}}, "/p/eq/point/0", "1e999999999 is"),
        ({"p": {"eq": {"point": [Decimal("1e999999999"), 0]}}}, "/p/eq/point/0", "1E+999999999"),
    ],
)
def test_the_json_form_bounds_strings_and_numbers_alike(no_conversion, source, path, start):
    with pytest.raises(ConstraintError) as caught:
        parse(source, schema=MARKET)

    assert (caught.value.code, caught.value.path) == ("bad_literal", path)
    assert caught.value.message.startswith(start)
    assert len(caught.value.message) < 300  # the literal is never echoed whole


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("price = 1" + "0" * 39, Decimal("1" + "0" * 39)),  # 40 digits
        ("price = 0.000" + "1" * 40, Decimal("0.000" + "1" * 40)),  # leading zeros do not count
        ("price = 1" + "0" * 39 + ".0", None),  # but trailing ones do: 41
        ("w = 1e400", None),  # the edge of the bound: too large for a float, said so
        ("w = 1.7976931348623157e308", 1.7976931348623157e308),
        ("w = 5e-324", 5e-324),
        ("w = 0.0e-439", 0.0),
        ("lot = 9223372036854775806", 9223372036854775806),
    ],
)
def test_numbers_inside_the_bounds_keep_their_value(text, value):
    if value is None:
        with pytest.raises(ConstraintError) as caught:
            parse(text, schema=MARKET)
        assert caught.value.code == "bad_literal"
        return

    (disjunct,) = parse(text, schema=MARKET).disjuncts
    ((_, interval),) = disjunct.items

    assert interval.lo == interval.hi == value


def test_deep_parentheses_stop_at_the_depth_limit_not_at_python_s():
    depth = 4_990  # the deepest that fits in 10,000 characters
    assert depth > 100 and sys.getrecursionlimit() < depth * 2

    with pytest.raises(ConstraintError) as caught:
        parse("(" * depth + "x = 1" + ")" * depth)

    assert (caught.value.code, caught.value.position) == ("too_deep", 100)


def test_deep_parentheses_past_the_length_limit_are_refused_unread():
    with pytest.raises(ConstraintError) as caught:
        parse("(" * 10_000 + "x = 1" + ")" * 10_000)

    assert (caught.value.code, caught.value.position) == ("too_long", 10_000)


def _nested(key: str, depth: int) -> dict:
    node: dict = {"x": 1}
    for _ in range(depth):
        node = {key: [node, {"y": 2}]} if key != "not" else {key: node}
    return node


@pytest.mark.parametrize("key", ["any_of", "all_of", "not"])
def test_deep_json_stops_at_the_depth_limit(key):
    with pytest.raises(ConstraintError) as caught:
        parse(_nested(key, 10_000))

    assert caught.value.code == "too_deep"
    step = "/not" if key == "not" else f"/{key}/0"
    assert caught.value.path == step * 101


def test_long_or_chains_stop_at_the_predicate_limit():
    with pytest.raises(ConstraintError) as caught:
        parse({"any_of": [{"x": i} for i in range(100_000)]})

    assert (caught.value.code, caught.value.path) == ("too_many_predicates", "/any_of/256/x")


# -- properties ---------------------------------------------------------------------------------

digits = st.one_of(
    st.text("0123456789", min_size=1, max_size=60),
    st.builds(lambda d, n: d * n, st.sampled_from("019"), st.integers(1, 20_000)),
)
exponents = st.one_of(
    st.none(),
    st.integers(-2_000, 2_000),
    st.integers(-(10**15), 10**15),
)


@st.composite
def numbers(draw) -> str:
    text = draw(st.sampled_from(["", "-"])) + draw(digits)
    if draw(st.booleans()):
        text += "." + draw(digits)
    exponent = draw(exponents)
    if exponent is not None:
        text += f"e{exponent}"
    return text


TEXT_FORMS = [
    "x = {}",
    "price <= {}",
    "lot = {}",
    "w > {}",
    "decimal d BETWEEN {0} AND {0}",
    "int i IN [{0}, 5)",
    "p = POINT({0}, 1)",
    "b OVERLAPS BOX(0, {0}, 1, 1)",
]


def explained_or_accepted(source) -> None:
    try:
        constraint = parse(source, schema=MARKET)
    except ConstraintError as error:
        assert error.message and len(error.message) < 600
        assert (error.position is None) != (error.path is None)
        return
    assert isinstance(constraint, Constraint)
    assert len(to_text(constraint)) <= 10_000


@settings(max_examples=300, deadline=None)
@given(number=numbers(), form=st.sampled_from(TEXT_FORMS))
def test_any_number_in_the_text_is_a_value_or_an_explained_error(number, form):
    explained_or_accepted(form.format(number))


@settings(max_examples=300, deadline=None)
@given(
    number=numbers(),
    key=st.sampled_from(["x", "price", "lot", "w", "float f", "int i", "decimal d"]),
    op=st.sampled_from(["eq", "le", "gt"]),
    as_number=st.booleans(),
)
def test_any_number_in_the_json_form_is_a_value_or_an_explained_error(number, key, op, as_number):
    operand: object = number
    if as_number:  # what json.loads(parse_float=Decimal) would give for the same spelling
        integral = "." not in number and "e" not in number and len(number) < 4000
        operand = int(number) if integral else Decimal(number)
    explained_or_accepted({key: {op: operand}})


@settings(max_examples=100, deadline=None)
@given(shape=st.lists(st.sampled_from(["(", "NOT ", "x = 1 OR ", "x = 1 AND "]), max_size=3000))
def test_any_nesting_in_the_text_is_a_value_or_an_explained_error(shape):
    opened = shape.count("(")
    explained_or_accepted("".join(shape) + "x = 2" + ")" * opened)


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(st.sampled_from(["any_of", "all_of", "not"]), max_size=3000))
def test_any_nesting_in_the_json_form_is_a_value_or_an_explained_error(keys):
    node: dict = {"x": 1}
    for key in keys:
        node = {key: node} if key == "not" else {key: [node, {"x": 2}]}
    explained_or_accepted(node)


def test_a_long_string_is_quoted_by_its_start_in_messages():
    with pytest.raises(ConstraintError) as caught:
        parse({"date d": {"eq": "x" * 1_000_000}})

    assert (caught.value.code, caught.value.path) == ("bad_literal", "/date d/eq")
    assert caught.value.message.startswith(
        f"DATE '{'x' * 30}...' (1,000,000 characters) is not a valid date: write DATE"
    )


@pytest.mark.parametrize("number", [1e40, -1e40, Decimal("1E+40"), 1.5e45])
def test_a_json_number_the_text_form_could_not_print_back_is_refused(number):
    # Given a JSON number whose plain decimal spelling has more than 40 digits (the text form
    # prints decimals in plain notation)
    # When it is parsed, then it is refused like the same number written out in the text form
    with pytest.raises(ConstraintError) as caught:
        parse({"price": {"le": number}})
    assert caught.value.code == "bad_literal"
    assert caught.value.path == "/price/le"
    assert "at most 40 significant digits" in caught.value.message


def test_the_largest_json_decimal_prints_back_as_text_that_parses():
    constraint = parse({"price": {"le": 1e39}})
    assert parse(to_text(constraint)) == constraint


def test_a_float_attribute_takes_a_large_json_number_it_prints_with_an_exponent():
    constraint = parse({"float w": {"le": 1e40}})
    assert to_text(constraint) == "w <= 1e+40"
    assert parse(to_text(constraint)) == constraint


# -- one literal written bare (a form's input) -------------------------------------------------


@pytest.mark.parametrize(
    ("t", "text", "value"),
    [
        (Type.INT, "9223372036854775807", 9223372036854775807),
        (Type.DECIMAL, "1.10", Decimal("1.10")),
        (Type.DECIMAL, "42", Decimal(42)),
        (Type.FLOAT, "2e3", 2000.0),
        (Type.DATE, "2028-02-29", dt.date(2028, 2, 29)),
        (Type.TIMESTAMP, "2026-12-01T09:30:00Z", dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC)),
        (Type.STRING, "it's", "it's"),
    ],
)
def test_a_bare_literal_is_what_the_same_literal_in_a_constraint_is(t, text, value):
    assert values.bare_value(t, text, "x") == value


@pytest.mark.parametrize(
    ("t", "text", "code", "message"),
    [
        (
            Type.INT,
            "1.5",
            "type_mismatch",
            "x is an int attribute, so it needs a whole number such as 42, not a decimal like 1.5",
        ),
        (Type.INT, "abc", "syntax", "'abc' is not a number"),
        (
            Type.DECIMAL,
            "2e3",
            "type_mismatch",
            "x is a decimal attribute, and a float literal such as 2e3 does not fit it: write "
            "the number without an exponent, as 2000",
        ),
        (Type.DECIMAL, "1e401", "bad_literal", f"1e401 {OUT_OF_RANGE}"),
        (Type.DECIMAL, "1" * 41, "bad_literal", f"{'1' * 30}... (41 characters) {TOO_MANY_DIGITS}"),
        (
            Type.INT,
            "9223372036854775808",
            "bad_literal",
            "9223372036854775808 is out of range for the int attribute x: ints go from "
            "-9223372036854775808 to 9223372036854775807",
        ),
        (
            Type.DATE,
            "2026-02-30",
            "bad_literal",
            "DATE '2026-02-30' is not a valid date: write DATE 'YYYY-MM-DD', such as "
            "DATE '2026-11-20'",
        ),
        (
            Type.TIMESTAMP,
            "2026-12-01T09:30Z",
            "bad_literal",
            "TIMESTAMP '2026-12-01T09:30Z' is not a valid timestamp: write TIMESTAMP "
            "'YYYY-MM-DDTHH:MM:SS', optionally with .ffffff and a zone (Z or +HH:MM; no zone "
            "means UTC), such as TIMESTAMP '2026-11-20T10:00:00Z'",
        ),
        (Type.STRING, "a\x00b", "bad_literal", "a string cannot contain the NUL character"),
    ],
)
def test_a_bare_literal_past_the_language_s_rules_is_refused_as_in_a_constraint(
    t, text, code, message
):
    with pytest.raises(ConstraintError) as refused:
        values.bare_value(t, text, "x")
    assert (refused.value.code, refused.value.position, refused.value.message) == (code, 0, message)


def test_a_bare_coordinate_is_any_finite_float():
    assert values.bare_coordinate("-0.5") == -0.5
    with pytest.raises(ConstraintError) as refused:
        values.bare_coordinate("1e400")
    assert refused.value.message == (
        "the coordinate 1e400 is too large for a float (the largest is about 1.8e308)"
    )
