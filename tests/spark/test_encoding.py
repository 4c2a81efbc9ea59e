"""The matcher's row encoding, without Spark: keys keep the order of values exactly, and the
4-D regions of points and boxes intersect exactly when SPEC 3.2 says the predicates do."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import matching
from matching import (
    Box,
    BoxContains,
    BoxEq,
    BoxOverlaps,
    BoxWithin,
    Point,
    PointEq,
    PointWithin,
    Type,
    predicates_intersect,
)
from matching.spark import encode as enc


def _cmp(a: object, b: object) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]  # a and b are keys of one comparable type


def _same_order(key, a, b) -> None:
    assert _cmp(key(a), key(b)) == _cmp(a, b), (a, b)


@given(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1))
def test_int_keys_keep_the_order(a: int, b: int) -> None:
    _same_order(enc.int_key, a, b)


@given(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(allow_nan=False, allow_infinity=False),
)
def test_float_keys_keep_the_order(a: float, b: float) -> None:
    _same_order(enc.float_key, a, b)


def test_minus_zero_and_zero_are_one_float() -> None:
    assert enc.float_key(-0.0) == enc.float_key(0.0)
    assert enc.float_key(-5e-324) < enc.float_key(0.0) < enc.float_key(5e-324)


_DECIMALS = st.decimals(allow_nan=False, allow_infinity=False) | st.builds(
    lambda digits, exp, neg: Decimal(("-" if neg else "") + digits + f"E{exp}"),
    st.from_regex(r"[0-9]{1,60}", fullmatch=True),
    st.integers(-20000, 20000),
    st.booleans(),
)


@settings(max_examples=400)
@given(_DECIMALS, _DECIMALS)
def test_decimal_keys_keep_the_order_at_any_precision(a: Decimal, b: Decimal) -> None:
    _same_order(enc.decimal_key, a, b)


@pytest.mark.parametrize(
    ("smaller", "larger"),
    [
        ("-0.1205", "-0.12"),  # the longer digit string is the larger magnitude
        ("-1", "-0.99999999999999999999999999999999999999999"),
        ("-0.000001", "0"),
        ("0", "0.000001"),
        ("0.12", "0.1205"),
        ("9.99", "10"),
        ("1" + "0" * 50, "1" + "0" * 49 + "1"),
    ],
)
def test_decimal_keys_at_the_edges(smaller: str, larger: str) -> None:
    assert enc.decimal_key(Decimal(smaller)) < enc.decimal_key(Decimal(larger))


def test_equal_decimals_get_one_key() -> None:
    assert (
        enc.decimal_key(Decimal("1.00"))
        == enc.decimal_key(Decimal("1"))
        == enc.decimal_key(Decimal("0.1E1"))
    )
    assert enc.decimal_key(Decimal("-0.00")) == enc.decimal_key(Decimal("0"))


@given(st.dates(), st.dates())
def test_date_keys_keep_the_order(a: dt.date, b: dt.date) -> None:
    _same_order(enc.date_key, a, b)


_ZONES = st.sampled_from(
    [dt.UTC, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone(-dt.timedelta(hours=11))]
)


@given(st.datetimes(timezones=_ZONES), st.datetimes(timezones=_ZONES))
def test_timestamp_keys_order_instants_whatever_the_zone(a: dt.datetime, b: dt.datetime) -> None:
    _same_order(enc.timestamp_key, a, b)


@given(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")), st.text())
def test_string_keys_order_by_code_point(a: str, b: str) -> None:
    b = b.encode("utf-8", "ignore").decode("utf-8").replace("\x00", "")
    assert _cmp(enc.string_key(a), enc.string_key(b)) == _cmp(
        [ord(c) for c in a], [ord(c) for c in b]
    )


def test_strings_beyond_the_bmp_sort_after_the_bmp() -> None:
    # UTF-16 would put U+1F600 before U+FFFD; code point order (and UTF-8) puts it after.
    assert enc.string_key("\ufffd") < enc.string_key("\U0001f600")


# -- points and boxes as regions of box space -------------------------------------------------


def _regions_meet(p, q) -> bool:
    """The matcher's join condition on two regions, in Python."""
    a, b = enc.region(p), enc.region(q)
    overlap = all(a[k] <= b[k + 4] and b[k] <= a[k + 4] for k in range(4))
    valid = max(a[0], b[0]) <= min(a[6], b[6]) and max(a[1], b[1]) <= min(a[7], b[7])
    loose_both = isinstance(p, enc.LOOSE) and isinstance(q, enc.LOOSE)
    return overlap and valid and not loose_both


COORDS = [0, 0.5, 1, 1.5, 2, 3]
BOXES = [Box.of(*c) for c in itertools.product([0, 1, 2], [0, 1], [1, 2, 3], [1, 2])]
BOX_PREDICATES = [k(b) for k in (BoxEq, BoxOverlaps, BoxContains, BoxWithin) for b in BOXES]
POINT_PREDICATES = [PointEq(Point(x, y)) for x in COORDS[:4] for y in COORDS[:4]] + [
    PointWithin(b) for b in BOXES
]


def test_box_regions_meet_exactly_when_the_predicates_intersect() -> None:
    # Loose pairs (OVERLAPS/CONTAINS both sides) always intersect and are counted as covered,
    # never as a hit of the join.
    for p, q in itertools.product(BOX_PREDICATES, repeat=2):
        loose_both = isinstance(p, enc.LOOSE) and isinstance(q, enc.LOOSE)
        expected = predicates_intersect(Type.BOX, p, q) and not loose_both
        assert _regions_meet(p, q) is expected, (p, q)


def test_point_regions_meet_exactly_when_the_predicates_intersect() -> None:
    for p, q in itertools.product(POINT_PREDICATES, repeat=2):
        assert _regions_meet(p, q) is predicates_intersect(Type.POINT, p, q), (p, q)


def test_open_sides_of_a_region_are_infinite() -> None:
    assert enc.region(BoxOverlaps(Box(1, 2, 3, 4))) == (
        -math.inf,
        -math.inf,
        1,
        2,
        3,
        4,
        math.inf,
        math.inf,
    )


# -- rows -----------------------------------------------------------------------------------


def test_wildcards_have_no_predicate_row_only_a_name_in_the_shape() -> None:
    constraint = matching.parse(
        "(int lot = * AND price <= 1.10 AND b OVERLAPS BOX(0, 0, 1, 1)) OR (string s = *)"
    )
    rows = list(enc.encode((7, constraint)))
    predicates = [r for tag, r in rows if tag == "p"]
    shapes = {r[0]: r for tag, r in rows if tag == "s"}
    disjuncts = [r for tag, r in rows if tag == "d"]

    assert [(r[0], r[1], r[3]) for r in predicates] == [(7, 0, "decimal:price"), (7, 0, "box:b")]
    assert [d[:2] for d in disjuncts] == [(7, 0), (7, 1)]
    first, second = shapes[disjuncts[0][2]], shapes[disjuncts[1][2]]
    assert first[1:] == (
        ["box:b", "decimal:price", "int:lot"],
        ["int:lot"],
        ["box:b"],
        ["decimal:price"],
    )
    assert second[1:] == (["string:s"], ["string:s"], [], [])


def test_a_shape_does_not_depend_on_the_order_of_the_predicates() -> None:
    a = matching.parse("x = 1 AND int y = *").disjuncts[0]
    b = matching.parse("int y = * AND x = 1").disjuncts[0]
    assert enc.shape_of(a).key == enc.shape_of(b).key
    assert enc.shape_of(a).key != enc.shape_of(matching.parse("x = 1 AND y = 1").disjuncts[0]).key


def test_interval_rows_keep_the_canonical_bounds() -> None:
    # On int, (3, 5) is [4, 4]; on decimal the open bounds stay open.
    (row,) = [r for tag, r in enc.encode((1, matching.parse("int x IN (3, 5)"))) if tag == "p"]
    assert row[4:8] == (enc.int_key(4), True, enc.int_key(4), True)
    (row,) = [r for tag, r in enc.encode((1, matching.parse("p IN (1.5, 2.50]"))) if tag == "p"]
    assert row[4:8] == (
        enc.decimal_key(Decimal("1.5")),
        False,
        enc.decimal_key(Decimal("2.5")),
        True,
    )
    (row,) = [r for tag, r in enc.encode((1, matching.parse("s < 'b'"))) if tag == "p"]
    assert row[4:8] == (None, False, b"b", False)
