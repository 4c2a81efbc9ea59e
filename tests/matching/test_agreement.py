"""The agreed constraint of a matching pair of disjuncts (what a trade records, SPEC 5.5)."""

import datetime as dt
from decimal import Decimal

import pytest

from matching import (
    Agreement,
    Attribute,
    Box,
    BoxContains,
    BoxEq,
    BoxOverlaps,
    BoxWithin,
    Disjunct,
    Point,
    PointEq,
    PointWithin,
    Type,
    agree,
    parse,
)

OFFER = "topic = 'pencils' AND lot BETWEEN 1000 AND 10000 AND price = 1.00"
BID = "topic = 'pencils' AND lot IN [2000, 5000] AND price <= 1.10"
PRICE = Attribute("price", Type.DECIMAL)
LOT = Attribute("lot", Type.INT)


def agreement(publication, subscription, i=0, j=0):
    return agree(parse(publication).disjuncts[i], parse(subscription).disjuncts[j])


def test_the_pencils_example():
    # given the offer and the bid of SPEC 3.3
    # when they agree
    result = agreement(OFFER, BID)

    # then the trade records the intersection, attribute by attribute
    assert result.to_text() == "topic = 'pencils' AND lot BETWEEN 2000 AND 5000 AND price = 1.00"
    assert result.max_value(PRICE) == Decimal("1.00")
    assert result.max_value("lot") == 5000
    assert result.upper("price") == Decimal("1.00")
    assert result.to_json() == {
        "string topic": {"eq": "pencils"},
        "int lot": {"between": [2000, 5000]},
        "decimal price": {"eq": "1.00"},
    }


def test_an_auction_reserve_meets_a_bid_cap():
    result = agreement("lot = 500 AND price >= 0.90", "lot BETWEEN 100 AND 800 AND price < 1.10")

    assert result.to_text() == "lot = 500 AND price IN [0.90, 1.10)"
    # the highest price both accept is not attained on a decimal: there is no maximum
    assert result.max_value(PRICE) is None
    assert result.upper(PRICE) == Decimal("1.10")
    # an int interval always attains its maximum
    assert result.max_value(LOT) == 500


def test_unbounded_and_unconstrained_attributes_have_no_maximum():
    result = agreement("int lot = * AND price >= 1.00", "lot >= 10 AND price >= 2.00")

    assert result.to_text() == "lot >= 10 AND price >= 2.00"
    assert result.max_value(LOT) is None
    assert result.upper(LOT) is None
    assert result.max_value(Attribute("colour", Type.STRING)) is None


def test_the_buyers_extra_conditions_are_included_after_the_sellers():
    result = agreement("lot <= 100", "colour = 'red' AND lot >= 50 AND int size = *")

    assert result.items == (
        (LOT, (parse("lot BETWEEN 50 AND 100").disjuncts[0].items[0][1],)),
        (Attribute("colour", Type.STRING), (parse("colour = 'red'").disjuncts[0].items[0][1],)),
        (Attribute("size", Type.INT), (parse("int size = *").disjuncts[0].items[0][1],)),
    )


def test_the_pair_is_chosen_by_disjunct_index():
    offer = "(lot < 5000 AND price = 1.00) OR (lot >= 5000 AND price = 0.90)"

    result = agreement(offer, "lot = 6000 AND price <= 0.95", i=1)

    assert result.to_text() == "lot = 6000 AND price = 0.90"


def test_disjuncts_that_do_not_match_agree_on_nothing():
    with pytest.raises(ValueError, match="do not match"):
        agreement("x = 1", "x = 2")


def test_dates_and_strings():
    result = agreement(
        "d BETWEEN DATE '2026-01-01' AND DATE '2026-12-31' AND s < 'm'",
        "d < DATE '2026-07-01' AND s >= 'c'",
    )

    assert result.max_value("d") == dt.date(2026, 6, 30)
    assert result.max_value("s") is None  # below 'm' there is no largest string
    assert result.to_text() == (
        "d BETWEEN DATE '2026-01-01' AND DATE '2026-06-30' AND s IN ['c', 'm')"
    )


def test_a_name_used_with_two_types_must_be_looked_up_by_attribute():
    result = agreement("int x = 1 AND decimal x = 1", "int x = 1 AND decimal x <= 2")

    assert result.max_value(Attribute("x", Type.DECIMAL)) == Decimal(1)
    with pytest.raises(ValueError, match="pass an Attribute"):
        result.max_value("x")


A = Box(0, 0, 2, 2)
B = Box(1, 1, 3, 3)
INSIDE = Box(0.5, 0.5, 1.5, 1.5)
FAR = Box(5, 5, 6, 6)


@pytest.mark.parametrize(
    ("p", "q", "agreed"),
    [
        # = A wins over anything it matches, on either side
        (BoxEq(A), BoxOverlaps(B), (BoxEq(A),)),
        (BoxWithin(Box(-1, -1, 3, 3)), BoxEq(A), (BoxEq(A),)),
        # one predicate when the intersection is one
        (BoxWithin(A), BoxWithin(B), (BoxWithin(Box(1, 1, 2, 2)),)),
        (BoxContains(A), BoxContains(FAR), (BoxContains(Box(0, 0, 6, 6)),)),
        (BoxOverlaps(INSIDE), BoxOverlaps(A), (BoxOverlaps(INSIDE),)),
        (BoxOverlaps(A), BoxOverlaps(INSIDE), (BoxOverlaps(INSIDE),)),
        (BoxOverlaps(A), BoxContains(B), (BoxContains(B),)),
        (BoxWithin(INSIDE), BoxOverlaps(A), (BoxWithin(INSIDE),)),
        (BoxContains(A), BoxWithin(A), (BoxEq(A),)),
        # otherwise both predicates, the publication's first
        (BoxOverlaps(A), BoxOverlaps(FAR), (BoxOverlaps(A), BoxOverlaps(FAR))),
        (BoxContains(FAR), BoxOverlaps(A), (BoxContains(FAR), BoxOverlaps(A))),
        (BoxOverlaps(INSIDE), BoxWithin(A), (BoxOverlaps(INSIDE), BoxWithin(A))),
        (BoxContains(INSIDE), BoxWithin(A), (BoxContains(INSIDE), BoxWithin(A))),
    ],
)
def test_box_agreements(p, q, agreed):
    b = Attribute("b", Type.BOX)

    result = agree(Disjunct(((b, p),)), Disjunct(((b, q),)))

    assert result == Agreement(((b, agreed),))


def test_two_box_predicates_print_and_serialize_side_by_side():
    result = agreement("b OVERLAPS BOX(0, 0, 1, 1)", "b OVERLAPS BOX(5, 5, 6, 6)")

    assert result.to_text() == (
        "b OVERLAPS BOX(0.0, 0.0, 1.0, 1.0) AND b OVERLAPS BOX(5.0, 5.0, 6.0, 6.0)"
    )
    assert result.max_value(Attribute("b", Type.BOX)) is None


@pytest.mark.parametrize(
    ("p", "q", "agreed"),
    [
        ("p = POINT(1, 1)", "point p WITHIN BOX(0, 0, 2, 2)", PointEq(Point(1, 1))),
        ("point p WITHIN BOX(0, 0, 2, 2)", "p = POINT(2, 2)", PointEq(Point(2, 2))),
        (
            "point p WITHIN BOX(0, 0, 2, 2)",
            "point p WITHIN BOX(1, 1, 3, 3)",
            PointWithin(Box(1, 1, 2, 2)),
        ),
        ("point p = *", "p = POINT(5, 5)", PointEq(Point(5, 5))),
    ],
)
def test_point_agreements(p, q, agreed):
    result = agreement(p, q)

    assert result.items == ((Attribute("p", Type.POINT), (agreed,)),)
