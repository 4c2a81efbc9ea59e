"""SPEC 2.5: the JSON form means exactly what the text means; its errors carry JSON pointers."""

import json
from decimal import Decimal

import pytest

from matching import ConstraintError, Type, parse, to_json

MARKET = {"price": Type.DECIMAL, "lot": Type.INT, "topic": Type.STRING}


@pytest.mark.parametrize(
    ("obj", "text"),
    [
        (
            {"any_of": [{"lot": {"between": [1000, 10000]}, "price": {"eq": Decimal("1.00")}}]},
            "lot BETWEEN 1000 AND 10000 AND price = 1.00",
        ),
        ({"x": {"eq": 5}}, "x = 5"),
        ({"x": 5}, "x = 5"),
        ({"topic": "pencils"}, "topic = 'pencils'"),
        ({"x": {"ne": 5}}, "x != 5"),
        ({"x": {"lt": 5}}, "x < 5"),
        ({"x": {"le": 5}}, "x <= 5"),
        ({"x": {"gt": 5}}, "x > 5"),
        ({"x": {"ge": 5}}, "x >= 5"),
        ({"x": {"gt": 1, "le": 3}}, "x > 1 AND x <= 3"),
        ({"x": {"in": {"lo": 1.5, "hi": 3, "bounds": "(]"}}}, "x IN (1.5, 3]"),
        ({"x": {"in": {"lo": 1, "hi": 3}}}, "x IN [1, 3]"),
        ({"int x": {"any": True}}, "int x = *"),
        ({"int x": "*"}, "int x = *"),
        ({"x": {"type": "int", "any": True}}, "int x = *"),
        ({"decimal x": {"eq": "1.00"}}, "x = 1.00"),
        ({"float x": {"eq": "1.5e3"}}, "x = 1.5e3"),
        ({"float x": {"eq": 0.1}}, "float x = 0.1"),
        ({"float x": {"eq": 5}}, "double x = 5"),
        ({"decimal x": {"eq": Decimal("1E+30")}}, "decimal x = 1000000000000000000000000000000"),
        ({"x": {"eq": 1e16}}, "decimal x = 10000000000000000"),
        ({"d": {"eq": {"date": "2026-11-20"}}}, "d = DATE '2026-11-20'"),
        ({"date d": {"ge": "2026-11-20"}}, "d >= DATE '2026-11-20'"),
        (
            {"t": {"eq": {"timestamp": "2026-11-20T10:00:00+01:00"}}},
            "t = TIMESTAMP '2026-11-20T09:00:00Z'",
        ),
        ({"p": {"eq": {"point": [1, 2.5]}}}, "p = POINT(1, 2.5)"),
        ({"point p": {"within": {"box": [0, 0, 1, 1]}}}, "point p WITHIN BOX(0, 0, 1, 1)"),
        ({"b": {"overlaps": {"box": [1, 1, 0, 0]}}}, "b OVERLAPS BOX(0, 0, 1, 1)"),
        ({"b": {"contains": {"box": [0, 0, 1, 1]}}}, "b CONTAINS BOX(0, 0, 1, 1)"),
        ({"b": {"eq": {"box": ["0", "0", "1", "1.5"]}}}, "b = BOX(0, 0, 1, 1.5)"),
        ({'"unit price"': {"le": Decimal("2.50")}}, '"unit price" <= 2.50'),
        ({'int "any_of"': 1}, 'int "any_of" = 1'),
        ({"not": {"x": {"lt": 2}}}, "NOT x < 2"),
        ({"not": {"x": 1, "y": 2}}, "NOT (x = 1 AND y = 2)"),
        ({"any_of": [{"x": 1}, {"y": 2}], "z": 3}, "(x = 1 OR y = 2) AND z = 3"),
        ({"all_of": [{"x": {"gt": 1}}, {"x": {"lt": 9}}]}, "x > 1 AND x < 9"),
        ({"any_of": [{"any_of": [{"x": 1}]}, {"not": {"not": {"y": 2}}}]}, "x = 1 OR y = 2"),
    ],
)
def test_json_means_the_same_as_text(obj, text):
    assert parse(obj) == parse(text)


def test_inside_a_market_strings_take_the_schema_type():
    obj = {"any_of": [{"lot": {"between": [1000, 10000]}, "price": {"eq": "1.00"}}]}

    constraint = parse(obj, schema=MARKET)

    assert constraint == parse("lot BETWEEN 1000 AND 10000 AND price = 1.00")
    assert str(constraint.disjuncts[0].items[1][1].lo) == "1.00"
    # outside the market the same string is a string
    assert parse({"price": {"eq": "1.00"}}) == parse("price = '1.00'")
    # and a wildcard needs no type inside the market
    assert parse({"lot": "*"}, schema=MARKET) == parse("int lot = *")


def test_floats_from_json_loads_are_taken_by_their_shortest_repr():
    obj = json.loads('{"price": {"le": 1.10}}')

    assert parse(obj) == parse("price <= 1.1")
    assert parse(json.loads('{"price": {"le": 1.10}}', parse_float=Decimal)) == parse(
        "price <= 1.10"
    )


@pytest.mark.parametrize(
    "text",
    [
        "topic = 'pencils' AND lot BETWEEN 2000 AND 5000 AND price <= 1.10",
        "(lot BETWEEN 1000 AND 4999 AND price = 1.00) OR (lot >= 5000 AND price = 0.90)",
        "x != 5 OR y IN (1.0, 2.0] OR z IN [1.0, 2.0) OR w IN (1.0, 2.0)",
        "int lot = * AND float w = 5.0 AND v = 1e+16",
        "d > DATE '2026-01-01' AND t <= TIMESTAMP '2026-11-20T10:00:00.5Z'",
        "p = POINT(1, 2) AND point q WITHIN BOX(0, 0, 1, 1) AND b OVERLAPS BOX(0, 0, 1, 1)",
        "b1 = BOX(0, 0, 1, 1) AND b2 CONTAINS BOX(0, 0, 1, 1) AND b3 WITHIN BOX(0, 0, 1, 1)",
        "\"unit price\" = 1.00 AND \"it's\" = 'it''s' AND \"any_of\" = 1 AND s = '*'",
        "decimal x = 5 AND string s = *",
    ],
)
def test_to_json_parses_back_to_an_equal_constraint(text):
    constraint = parse(text)
    obj = to_json(constraint)

    assert parse(obj) == constraint
    assert parse(json.loads(json.dumps(obj))) == constraint
    assert parse(json.loads(json.dumps(obj), parse_float=Decimal)) == constraint


def test_to_json_shape():
    constraint = parse(
        "(topic = 'pencils' AND lot IN [2000, 5000) AND price <= 1.10) OR int lot = *"
    )

    assert to_json(constraint) == {
        "any_of": [
            {
                "string topic": {"eq": "pencils"},
                "int lot": {"between": [2000, 4999]},
                "decimal price": {"le": "1.10"},
            },
            {"int lot": {"any": True}},
        ]
    }
    assert to_json(parse("x IN (1.0, 2.0]"))["any_of"][0] == {
        "decimal x": {"in": {"lo": "1.0", "hi": "2.0", "bounds": "(]"}}
    }


@pytest.mark.parametrize(
    ("obj", "code", "path", "phrase"),
    [
        ({}, "syntax", "", "an empty object states no condition"),
        ({"any_of": []}, "syntax", "/any_of", "any_of takes a non-empty list"),
        ({"any_of": {"x": 1}}, "syntax", "/any_of", "found an object"),
        ({"any_of": [{"x": 1}, 5]}, "syntax", "/any_of/1", "expected an object of conditions"),
        ({"any_of": [{"lot": {"between": [1]}}]}, "syntax", "/any_of/0/lot/between", "two values"),
        ({"x": {"foo": 1}}, "syntax", "/x/foo", "unknown operator 'foo'"),
        ({"x": {}}, "syntax", "/x", "needs at least one condition"),
        ({"x": {"type": "int"}}, "syntax", "/x", "has a type but no condition"),
        ({"x": {"type": "money", "eq": 1}}, "syntax", "/x/type", "type must be one of"),
        ({"int x": {"type": "float", "eq": 1}}, "type_mismatch", "/int x/type", "says int"),
        ({"x y": 1}, "syntax", "/x y", "is not an attribute"),
        ({"a/b": 1}, "syntax", "/a~1b", "is not an attribute"),
        ({"x": None}, "syntax", "/x", "found null"),
        ({"x": [1, 2]}, "syntax", "/x", "found a list"),
        ({"x": {"eq": True}}, "bad_literal", "/x/eq", "true is not a value"),
        ({"x": {"eq": None}}, "bad_literal", "/x/eq", "null is not a value"),
        ({"x": {"eq": float("nan")}}, "bad_literal", "/x/eq", "NaN and infinities"),
        ({"x": {"eq": Decimal("Infinity")}}, "bad_literal", "/x/eq", "NaN and infinities"),
        ({"x": {"eq": {"date": 20261120}}}, "bad_literal", "/x/eq/date", "takes a string"),
        ({"x": {"eq": {"date": "2026-13-01"}}}, "bad_literal", "/x/eq/date", "not a valid date"),
        ({"x": {"eq": {"point": [1]}}}, "bad_literal", "/x/eq/point", "list of 2 numbers"),
        ({"x": {"eq": {"point": [1, True]}}}, "bad_literal", "/x/eq/point/1", "coordinate"),
        ({"x": {"eq": {"colour": "red"}}}, "bad_literal", "/x/eq", "expected a value"),
        ({"x": {"any": False}}, "syntax", "/x/any", '"any" takes true'),
        ({"lot": "*"}, "needs_type_prefix", "/lot", "int lot = *"),
        ({"lot": {"between": [5, 1]}}, "empty_range", "/lot/between", "contains no value"),
        ({"x": {"in": [1, 2]}}, "syntax", "/x/in", "in takes an object"),
        ({"x": {"in": {"lo": 1, "hi": 2, "bounds": "]["}}}, "syntax", "/x/in/bounds", "bounds"),
        ({"x": {"in": {"lo": 1, "hi": 2, "step": 1}}}, "syntax", "/x/in/step", "only lo, hi"),
        ({"decimal x": {"eq": "1e5"}}, "type_mismatch", "/decimal x/eq", "without an exponent"),
        ({"decimal x": {"eq": "abc"}}, "bad_literal", "/decimal x/eq", "is not a number"),
        ({"int x": {"eq": 2**63}}, "bad_literal", "/int x/eq", "out of range"),
        ({"int x": {"eq": 10**5000}}, "bad_literal", "/int x/eq", "too many digits"),
        ({"x": 1, "string y": {"lt": 1}}, "type_mismatch", "/string y/lt", "a string attribute"),
        ({"not": {"int x": "*"}}, "cannot_negate", "/not/int x", "cannot negate a wildcard"),
        (
            {"b": {"overlaps": {"box": [0, 0, 1, 1]}, "within": {"box": [0, 0, 1, 1]}}},
            "duplicate_attribute",
            "/b/within",
            "already has a condition",
        ),
        ({"x": 1, "all_of": [{"x": 2}]}, "unsatisfiable", "", "no value can satisfy"),
        (
            {"all_of": [{"any_of": [{f"a{i}": 1}, {f"a{i}": 2}]} for i in range(7)]},
            "too_many_disjuncts",
            "/all_of/6/any_of",
            "more than 64 alternatives",
        ),
        ({f"x{i}": 1 for i in range(257)}, "too_many_predicates", "/x256", "at most 256"),
        (
            {"all_of": [{f"s{i}": {"eq": "a" * 400}} for i in range(30)]},
            "too_long",
            "",
            "once normalized",
        ),
    ],
)
def test_json_errors_carry_a_path(obj, code, path, phrase):
    with pytest.raises(ConstraintError) as caught:
        parse(obj)

    error = caught.value
    assert (error.code, error.path) == (code, path), error.message
    assert error.position is None
    assert phrase in error.message


def test_each_json_predicate_is_typed_on_its_own_as_in_text():
    # y = 'a' AND y < 1 constrains a string y and an int y, in JSON as in text
    assert parse({"y": {"eq": "a", "lt": 1}}) == parse("y = 'a' AND y < 1")


def test_a_prefix_disagreeing_with_the_market_in_json():
    with pytest.raises(ConstraintError) as caught:
        parse({"float price": {"le": 1}}, schema=MARKET)

    assert (caught.value.code, caught.value.path) == ("type_mismatch", "/float price")


def test_deep_nesting_is_an_error_not_a_recursion_error():
    obj: dict = {"x": 1}
    for _ in range(5000):
        obj = {"not": obj}

    with pytest.raises(ConstraintError) as caught:
        parse(obj)

    assert caught.value.code == "too_deep"
    assert caught.value.path == "/not" * 101
