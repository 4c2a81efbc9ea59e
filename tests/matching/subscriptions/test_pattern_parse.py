"""Form 3 (SPEC 8.3 patterns): parsing, canonical printing, errors with their position,
and limits."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matching.subscriptions import Kind, QueryError, parse_query, to_text
from matching.subscriptions.patterns import model as pm
from matching.subscriptions.patterns.parser import MAX_DEPTH, MAX_SIDES, MAX_STEPS

T = "FILTER{type = 'trade'}(EVENTS)"
TRADE = pm.Compare("=", pm.Ref(None, "type"), pm.Literal("trade"))


def test_the_fold_example_parses_to_its_tree():
    q = parse_query(
        f"select a.price, b.price, n, dur as d, start, end from {T} as a "
        f"fold{{b.subject = a.subject, b.price >= b.last.price, count as n, avg(b.price) as m}} "
        f"{T} as b where DUR >= 30m and m > 1 within 1h"
    )
    assert q == pm.PatternQuery(
        (
            pm.Pattern(
                (
                    pm.PatternItem(pm.Ref("a", "price")),
                    pm.PatternItem(pm.Ref("b", "price")),
                    pm.PatternItem(pm.AggregateRef("n")),
                    pm.PatternItem(pm.Dur(), "d"),
                    pm.PatternItem(pm.Bound("start")),
                    pm.PatternItem(pm.Bound("end")),
                ),
                pm.Source("a", TRADE),
                (
                    pm.Step(
                        "fold",
                        pm.Compare("=", pm.Ref("b", "subject"), pm.Ref("a", "subject")),
                        pm.Source("b", TRADE),
                        pm.Compare(">=", pm.Ref("b", "price"), pm.Ref("b", "price", last=True)),
                        (
                            pm.FoldAggregate("COUNT", None, "n"),
                            pm.FoldAggregate("AVG", pm.Ref("b", "price"), "m"),
                        ),
                    ),
                ),
                pm.All(
                    (
                        pm.Compare(">=", pm.Dur(), pm.Duration(1800)),
                        pm.Compare(">", pm.AggregateRef("m"), pm.Literal(Decimal(1))),
                    )
                ),
                3600,
            ),
        )
    )
    assert q.kind is Kind.PATTERN


def test_not_is_pushed_down_and_arithmetic_keeps_its_tree():
    q = parse_query(
        "SELECT b.price FROM EVENTS AS a NEXT{NOT (b.price > 1 OR NOT b.subject MATCHES "
        "'office.>') AND (b.price - a.price) / a.price <> -0.5 * 2} EVENTS AS b"
    )
    (side,) = q.sides
    assert side.steps[0].condition == pm.All(
        (
            pm.Compare("<=", pm.Ref("b", "price"), pm.Literal(Decimal(1))),
            pm.Matches(pm.Ref("b", "subject"), "office.>"),
            pm.Compare(
                "!=",
                pm.Arithmetic(
                    "/",
                    pm.Arithmetic("-", pm.Ref("b", "price"), pm.Ref("a", "price")),
                    pm.Ref("a", "price"),
                ),
                pm.Arithmetic("*", pm.Literal(Decimal("-0.5")), pm.Literal(Decimal(2))),
            ),
        )
    )


CANONICAL = [
    # (as written, canonical text)
    (
        f"select a.price,b.price from {T} as a next{{b.subject=a.subject and "
        f"b.price>1.05*a.price}} {T} as b",
        f"SELECT a.price, b.price FROM {T} AS a NEXT{{b.subject = a.subject AND "
        f"b.price > 1.05 * a.price}} {T} AS b",
    ),
    (
        "SELECT DUR FROM EVENTS AS a NEXT{(b.price > 1 OR b.price < 0) AND NOT (DUR > 60m)} "
        "EVENTS AS b WITHIN 120m",
        "SELECT DUR FROM EVENTS AS a NEXT{(b.price > 1 OR b.price < 0) AND DUR <= 1h} "
        "EVENTS AS b WITHIN 2h",
    ),
    (
        "SELECT a.price FROM EVENTS AS a NEXT{b.price - (a.price - 1) > ((a.price * 2)) / 3 "
        "AND b.time > TIMESTAMP '2026-11-20T10:00:00+01:00' AND b.price <> 1} EVENTS AS b",
        "SELECT a.price FROM EVENTS AS a NEXT{b.price - (a.price - 1) > a.price * 2 / 3 "
        "AND b.time > TIMESTAMP '2026-11-20T09:00:00Z' AND b.price != 1} EVENTS AS b",
    ),
    (
        "SELECT a.price AS \"first price\" FROM FILTER{NOT subject MATCHES 'o.>' OR "
        "quantity >= 10}(EVENTS) AS a UNION select b.price from events as b",
        "SELECT a.price AS \"first price\" FROM FILTER{NOT subject MATCHES 'o.>' OR "
        "quantity >= 10}(EVENTS) AS a UNION SELECT b.price FROM EVENTS AS b",
    ),
    (
        "SELECT s, b.last.price FROM EVENTS AS a FOLD{b.offer = a.offer, b.value < "
        "b.last.value, SUM(b.value) AS s, MIN(b.value) AS lo, MAX(b.value) AS hi} EVENTS AS b "
        "NEXT{c.price > lo AND c.price < hi} EVENTS AS c",
        "SELECT s, b.last.price FROM EVENTS AS a FOLD{b.offer = a.offer, b.value < "
        "b.last.value, SUM(b.value) AS s, MIN(b.value) AS lo, MAX(b.value) AS hi} EVENTS AS b "
        "NEXT{c.price > lo AND c.price < hi} EVENTS AS c",
    ),
]


@pytest.mark.parametrize(("written", "canonical"), CANONICAL)
def test_canonical_text(written, canonical):
    q = parse_query(written)
    assert to_text(q) == canonical
    assert parse_query(canonical) == q


def test_a_timestamp_literal_is_an_aware_datetime():
    q = parse_query(
        "SELECT a.time FROM FILTER{time >= TIMESTAMP '2026-11-20T10:00:00Z'}(EVENTS) AS a"
    )
    assert q.sides[0].first.filter == pm.Compare(
        ">=", pm.Ref(None, "time"), pm.Literal(dt.datetime(2026, 11, 20, 10, tzinfo=dt.UTC))
    )


def test_or_inside_and_and_nested_negations():
    q = parse_query("SELECT a.price FROM FILTER{NOT (price > 1 AND NOT (price < 3))}(EVENTS) AS a")
    assert q.sides[0].first.filter == pm.Any_(
        (
            pm.Compare("<=", pm.Ref(None, "price"), pm.Literal(Decimal(1))),
            pm.Compare("<", pm.Ref(None, "price"), pm.Literal(Decimal(3))),
        )
    )


F = "FILTER{type = 'trade'}(EVENTS)"
ERRORS = [
    # (query, the text the error points at, code, part of the message)
    ("SELECT a.price FROM FILTER{price > a.price}(EVENTS) AS a", "a.price}", "not_static",
     "static"),
    ("SELECT a.price FROM FILTER{DUR > 1m}(EVENTS) AS a", "DUR", "not_static", "static"),
    (f"SELECT a.price FROM {F} AS a NEXT{{b.price > 1}} FILTER{{price > a.price}}(EVENTS) AS b",
     "a.price}(", "not_static", "names an alias"),
    ("SELECT * FROM EVENTS AS a", "*", "syntax", "selects its items"),
    ("SELECT a.price FROM EVENTS AS a NEXT{c.price > 1} EVENTS AS b", "c.price", "unknown_alias",
     "not an alias bound here"),
    ("SELECT c.price FROM EVENTS AS a NEXT{b.price > 1} EVENTS AS b", "c.price", "unknown_alias",
     "not an alias"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.last.price > 1} EVENTS AS b", "b.last",
     "unknown_alias", "belongs to a FOLD"),
    ("SELECT a.price FROM EVENTS AS a FOLD{b.price > n, b.price > 1, COUNT AS n} EVENTS AS b",
     "n, b", "unknown_attribute", "its own conditions"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.price > x} EVENTS AS b", "x}", "unknown_attribute",
     "not an aggregate"),
    ("SELECT a.price FROM EVENTS AS a NEXT{price > 1} EVENTS AS b", "price > 1", "unknown_attribute",
     "not an aggregate"),
    ("SELECT a.lot FROM EVENTS AS a", "lot", "unknown_attribute", "unknown attribute lot"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.subject > 1} EVENTS AS b", "1}", "type_mismatch",
     "one type"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.subject + 1 > 1} EVENTS AS b", "b.subject",
     "type_mismatch", "numbers"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.price MATCHES 'x'} EVENTS AS b", "b.price",
     "syntax", "MATCHES takes a subject"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.subject MATCHES 'a..b'} EVENTS AS b", ".b'",
     "bad_pattern", "empty token"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.price} EVENTS AS b", "}", "syntax",
     "expected a comparison"),
    ("SELECT a.price FROM EVENTS AS a NEXT{(b.price > 1) + 1 > 2} EVENTS AS b", "+", "syntax",
     "cannot be compared"),
    ("SELECT a.price FROM EVENTS AS a NEXT{(b.price > 1} EVENTS AS b", "}", "syntax", "')'"),
    ("SELECT a.price FROM EVENTS AS a FOLD{b.price > 1} EVENTS AS b", "} EVENTS", "syntax",
     "iteration condition"),
    ("SELECT a.price FROM EVENTS AS a FOLD{b.price > 1, b.price > 1, COUNT} EVENTS AS b",
     "} EVENTS", "syntax", "named"),
    ("SELECT a.price FROM EVENTS AS a FOLD{b.price > 1, b.price > 1, SUM(a.price) AS s} "
     "EVENTS AS b", "SUM", "unknown_alias", "FOLD's own events"),
    ("SELECT a.price FROM EVENTS AS a FOLD{b.price > 1, b.price > 1, SUM(b.type) AS s} "
     "EVENTS AS b", "b.type", "bad_aggregate", "numeric"),
    ("SELECT a.price FROM EVENTS AS a FOLD{b.price > 1, b.price > 1, COUNT AS a} EVENTS AS b",
     "COUNT", "duplicate", "already used"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.price > 1} EVENTS AS a", 60, "duplicate",
     "already used"),
    ("SELECT a.price FROM EVENTS AS next", "next", "reserved_word", "reserved"),
    ("SELECT a.price FROM EVENTS AS last", "last", "reserved_word", "cannot be an alias"),
    ("SELECT a.price FROM EVENTS a", 27, "syntax", "AS and an alias"),
    ("SELECT a.price FROM FILTER{type = 'trade'} AS a", "AS", "syntax", "'('"),
    ("SELECT a.price, a.price FROM EVENTS AS a", "a.price FROM", "duplicate", "both"),
    ("SELECT a.price FROM EVENTS AS a WITHIN 5", "5", "syntax", "a duration"),
    ("SELECT a.price FROM EVENTS AS a WITHIN 99999w", "99999w", "bad_literal", "at most"),
    ("SELECT a.price FROM EVENTS AS a UNION a.price", 38, "syntax", "SELECT after UNION"),
    ("SELECT a.price FROM EVENTS AS a LIMIT 3", "LIMIT", "syntax", "expected WHERE"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.price > } EVENTS AS b", "}", "syntax",
     "expected a value"),
    ("SELECT a.price FROM EVENTS AS a NEXT{b.price > NOW} EVENTS AS b", "NOW", "syntax",
     "expected a value"),
    ("SELECT a.x.y.z FROM EVENTS AS a", "a.x", "syntax", "alias.last.attr"),
]  # fmt: skip


def _position(text: str, at: str | int) -> int:
    return at if isinstance(at, int) else text.index(at)


@pytest.mark.parametrize(("text", "at", "code", "fragment"), ERRORS)
def test_errors_name_what_and_where(text, at, code, fragment):
    with pytest.raises(QueryError) as info:
        parse_query(text)
    err = info.value
    assert (err.code, err.position) == (code, _position(text, at)), err
    assert fragment in err.message


def test_limits_fail_fast():
    step = "NEXT{b%d.price > 1} EVENTS AS b%d"
    steps = " ".join(step % (i, i) for i in range(MAX_STEPS))
    parse_query(f"SELECT a.price FROM EVENTS AS a {steps}")
    over = f"SELECT a.price FROM EVENTS AS a {steps} NEXT{{z.price > 1}} EVENTS AS z"
    with pytest.raises(QueryError) as info:
        parse_query(over)
    assert (info.value.code, info.value.position) == ("too_many", over.index("NEXT{z"))

    side = "SELECT a.price FROM EVENTS AS a"
    parse_query(" UNION ".join([side] * MAX_SIDES))
    text = " UNION ".join([side] * (MAX_SIDES + 1))
    with pytest.raises(QueryError) as info:
        parse_query(text)
    assert (info.value.code, info.value.position) == ("too_many", text.rindex("SELECT"))

    deep = (
        "SELECT a.price FROM FILTER{"
        + "(" * (MAX_DEPTH + 1)
        + "price > 1"
        + ")" * (MAX_DEPTH + 1)
        + "}(EVENTS) AS a"
    )
    with pytest.raises(QueryError) as info:
        parse_query(deep)
    assert info.value.code == "too_deep"
    nested = "SELECT a.price FROM FILTER{" + "(" * MAX_DEPTH + "price > 1" + ")" * MAX_DEPTH
    assert parse_query(nested + "}(EVENTS) AS a") == parse_query(
        "SELECT a.price FROM FILTER{price > 1}(EVENTS) AS a"
    )

    many_nots = "SELECT a.price FROM FILTER{" + "NOT " * 100 + "price > 1}(EVENTS) AS a"
    with pytest.raises(QueryError) as info:
        parse_query(many_nots)
    assert info.value.code == "too_deep"


WORDS = ["SELECT", "a.price", "b.price", "b.last.price", "a.subject", "b.subject", "FROM",
         "EVENTS", "AS", "a", "b", "n", "NEXT", "FOLD", "FILTER", "{", "}", "(", ")", ",",
         "type", "=", "!=", "<", ">=", "'trade'", "1.05", "-1", "30m", "*", "/", "+", "-",
         "AND", "OR", "NOT", "DUR", "COUNT", "SUM", "WHERE", "WITHIN", "UNION", "MATCHES",
         "'office.>'", "TIMESTAMP", "'2026-11-20T10:00:00Z'", "start", "end", "price"]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=30))
def test_any_text_parses_or_is_refused_with_a_position(words):
    text = "SELECT a.price FROM EVENTS AS a " + " ".join(words)
    try:
        q = parse_query(text)
    except QueryError as exc:
        assert 0 <= exc.position <= len(text)
    else:
        assert parse_query(to_text(q)) == q
