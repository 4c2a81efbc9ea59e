"""The subscription language: what queries parse to, their canonical text, and every kind
of refusal with its position (SPEC 8.3, forms 1 and 2)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matching import Interval, Type, Wildcard
from matching.subscriptions import Kind, QueryError, parse_query, to_text
from matching.subscriptions.language.model import (
    Aggregate,
    AtomicQuery,
    Attr,
    AttrTest,
    CompositeQuery,
    Condition,
    Having,
    Join,
    SubjectTest,
    TimeBound,
    TimeRange,
)
from matching.subscriptions.language.parser import MAX_CONJUNCTS, MAX_LENGTH


def cond(*tests):
    return Condition((tuple(tests),))


def test_an_atomic_query():
    q = parse_query(
        "select price as p, subject where type = 'trade' and price > 1.00, "
        "(subject matches 'office.>' or price = *), start_time = now - 25m"
    )
    assert q == AtomicQuery(
        select=(Attr("price", "p"), Attr("subject")),
        conditions=(
            cond(AttrTest(None, "type", Type.STRING, Interval("trade", True, "trade", True))),
            cond(
                AttrTest(None, "price", Type.DECIMAL, Interval(Decimal("1.00"), False, None, False))
            ),
            Condition(
                (
                    (SubjectTest(None, "office.>"),),
                    (AttrTest(None, "price", Type.DECIMAL, Wildcard()),),
                )
            ),
        ),
        time=TimeRange(TimeBound(-25 * 60), None),
    )
    assert q.kind is Kind.EVENTS


def test_aggregates_group_by_and_having_in_either_order():
    a = parse_query("SELECT subject, AVG(price, 10) WHERE price > 0 GROUP BY subject")
    assert a.select == (Attr("subject"), Aggregate("AVG", "price", 10, Type.DECIMAL))
    assert a.group_by == ("subject",)
    h1 = parse_query("SELECT * HAVING COUNT(offer, 3) >= 3 RESET GROUP BY subject, type")
    h2 = parse_query("SELECT * GROUP BY subject, type HAVING COUNT(offer, 3) >= 3 RESET")
    assert h1 == h2
    assert h1.having == Having(Aggregate("COUNT", "offer", 3, Type.INT), ">=", 3, reset=True)


def test_a_composite_query():
    q = parse_query(
        "SELECT b.offer, b.ask FROM a AND b WHERE a.type = 'trade', a.price >= 1.05, "
        "a.start_time = NOW - 7d, b.type = 'offer_posted', b.subject = a.subject"
    )
    assert q == CompositeQuery(
        select=(Attr("offer", None, "b"), Attr("ask", None, "b")),
        aliases=("a", "b"),
        conditions=(
            cond(AttrTest("a", "type", Type.STRING, Interval("trade", True, "trade", True))),
            cond(
                AttrTest("a", "price", Type.DECIMAL, Interval(Decimal("1.05"), True, None, False))
            ),
            cond(
                AttrTest(
                    "b", "type", Type.STRING, Interval("offer_posted", True, "offer_posted", True)
                )
            ),
        ),
        joins=(Join("b", "subject", "=", "a", "subject"),),
        alias_times=(("a", TimeRange(TimeBound(-7 * 86400), None)),),
    )
    assert q.kind is Kind.COMPOSITE
    assert q.range_of("b") == TimeRange()


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("select * where type='trade'", "SELECT * WHERE type = 'trade'"),
        ("SELECT price WHERE price != 1.00", "SELECT price WHERE (price < 1.00 OR price > 1.00)"),
        ("SELECT price WHERE (NOT price > 1)", "SELECT price WHERE price <= 1"),
        ("SELECT price WHERE (price > 1 AND price <= 3)", "SELECT price WHERE price IN (1, 3]"),
        ("SELECT price WHERE price = 5", "SELECT price WHERE price = 5"),
        ("SELECT price WHERE quantity BETWEEN 2000 AND 5000.5",
         "SELECT price WHERE quantity BETWEEN 2000 AND 5000.5"),
        ("SELECT * WHERE (NOT subject MATCHES 'a.*')", "SELECT * WHERE (NOT subject MATCHES 'a.*')"),
        ("SELECT * WHERE (subject MATCHES 'a.>' AND price > 1 OR offer = 3)",
         "SELECT * WHERE ((subject MATCHES 'a.>' AND price > 1) OR offer = 3)"),
        ("SELECT * WHERE start_time = NOW - 60m, end_time = NOW + 14d",
         "SELECT * WHERE start_time = NOW - 1h, end_time = NOW + 2w"),
        ("SELECT * WHERE start_time = NOW -90s, end_time = NOW + 0m",
         "SELECT * WHERE start_time = NOW - 90s, end_time = NOW"),
        ("SELECT * WHERE end_time = TIMESTAMP '2026-11-20T11:00:00+01:00'",
         "SELECT * WHERE end_time = TIMESTAMP '2026-11-20T10:00:00Z'"),
        ("SELECT * WHERE time >= TIMESTAMP '2026-11-20 10:00:00'",
         "SELECT * WHERE time >= TIMESTAMP '2026-11-20T10:00:00Z'"),
        ("SELECT max(price,2) AS top, subject GROUP BY subject",
         "SELECT MAX(price, 2) AS top, subject GROUP BY subject"),
        ("SELECT price HAVING avg(price, 3) <> 1 reset",
         "SELECT price HAVING AVG(price, 3) != 1 RESET"),
        ("SELECT * FROM x AND y AND z WHERE x.offer < y.offer, z.offer <> x.offer, start_time = NOW",
         "SELECT * FROM x AND y AND z WHERE x.offer < y.offer, z.offer != x.offer, start_time = NOW"),
        ("SELECT a.offer FROM a AND b WHERE (a.price > 1 OR a.subject MATCHES 'x.>'), b.end_time = NOW",
         "SELECT a.offer FROM a AND b WHERE (a.price > 1 OR a.subject MATCHES 'x.>'), b.end_time = NOW"),
    ],
)  # fmt: skip
def test_canonical_text(text, canonical):
    q = parse_query(text)
    assert to_text(q) == canonical
    assert parse_query(canonical) == q


@pytest.mark.parametrize(
    ("text", "position", "code", "fragment"),
    [
        ("", 0, "syntax", "expected SELECT"),
        ("SELECT", 6, "syntax", "expected an attribute"),
        ("SELECT lot", 7, "unknown_attribute", "unknown attribute lot"),
        ("SELECT price WHERE lot = 1", 19, "unknown_attribute", "unknown attribute lot"),
        ("SELECT price WHERE price = 'x'", 27, "type_mismatch", "price is a decimal attribute"),
        ("SELECT price WHERE offer = 1.5", 27, "type_mismatch", "offer is an int attribute"),
        ("SELECT price WHERE price = 1e3", 27, "type_mismatch", "a float literal"),
        ("SELECT price WHERE time > '2026-11-20'", 26, "type_mismatch", "timestamp"),
        ("SELECT price WHERE subject MATCHES 'office.'", 43, "bad_pattern", "empty token"),
        ("SELECT price WHERE subject MATCHES 'foo*'", 39, "bad_pattern", "whole token"),
        ("SELECT price WHERE subject MATCHES '>.x'", 36, "bad_pattern", "only be the last"),
        ("SELECT price WHERE (price > 1 OR subject MATCHES '..')", 50, "bad_pattern", "empty"),
        ("SELECT price WHERE price MATCHES 'a'", 19, "syntax", "MATCHES takes the subject"),
        ("SELECT price AS avg", 16, "reserved_word", "AVG is a reserved keyword"),
        ("SELECT price AS from", 16, "reserved_word", "FROM is a reserved keyword"),
        ("SELECT price AS next", 16, "reserved_word", "NEXT is a reserved keyword"),
        ("SELECT price, price", 14, "duplicate", "both be called price"),
        ("SELECT price AS offer, offer", 23, "duplicate", "both be called offer"),
        ("SELECT price GROUP BY subject", 13, "bad_aggregate", "GROUP BY needs aggregates"),
        ("SELECT AVG(price, 2) HAVING COUNT(price, 2) > 1", 21, "bad_aggregate", "HAVING"),
        ("SELECT AVG(price, 2), SUM(price, 3)", 22, "bad_aggregate", "share their window"),
        ("SELECT subject, AVG(price, 2)", 7, "bad_aggregate", "must be grouped"),
        ("SELECT AVG(subject, 2)", 11, "bad_aggregate", "numeric attribute"),
        ("SELECT AVG(price, 0)", 18, "bad_window", "from 1 to 10,000"),
        ("SELECT AVG(price, 10001)", 18, "bad_window", "from 1 to 10,000"),
        ("SELECT AVG(price, 2.5)", 18, "bad_window", "whole number"),
        ("SELECT price HAVING AVG(price, 3) > 'x'", 36, "type_mismatch", "decimal"),
        ("SELECT price HAVING COUNT(price, 3) > 1.5", 38, "type_mismatch", "int"),
        ("SELECT price HAVING price > 1", 20, "syntax", "expected an aggregate"),
        ("SELECT price WHERE price > 1 OR price < 0", 29, "syntax", "OR is allowed only inside"),
        ("SELECT price WHERE NOT price > 1", 19, "syntax", "NOT is allowed only inside"),
        ("SELECT price WHERE (price > 5 AND price < 3)", 19, "unsatisfiable", "no value"),
        ("SELECT price WHERE (price > 1", 29, "syntax", "expected ')'"),
        ("SELECT price WHERE decimal price > 1", 19, "syntax", "no type prefix"),
        ("SELECT price WHERE price != *", 19, "cannot_negate", "wildcard"),
        ("SELECT price WHERE price BETWEEN 5 AND 1", 19, "empty_range", "contains no value"),
        ("SELECT price WHERE start_time > NOW", 30, "syntax", "expected '='"),
        ("SELECT price WHERE start_time = NOW, start_time = NOW", 37, "duplicate", "set twice"),
        ("SELECT price WHERE start_time = NOW - 5", 38, "syntax", "a duration"),
        ("SELECT price WHERE start_time = NOW - 36501d", 38, "bad_literal", "at most 36500d"),
        ("SELECT price WHERE start_time = '2026-11-20'", 32, "syntax", "start_time takes NOW"),
        ("SELECT price WHERE (start_time = NOW)", 20, "syntax", "its own conjunct"),
        ("SELECT price WHERE price > NOW", 27, "syntax", "NOW is only for"),
        ("SELECT price WHERE a.price > 1", 19, "unknown_attribute", "qualified names"),
        ("SELECT price WHERE price > 1 GROUP subject", 35, "syntax", "expected BY"),
        ("SELECT price WHERE price > 1 LIMIT 5", 29, "syntax", "expected ',' or AND"),
        ("SELECT price WHERE price ~ 1", 25, "syntax", "unexpected character '~'"),
        ("SELECT price WHERE type = 'trade", 26, "syntax", "never closed"),
        # form 2
        ("SELECT b.offer FROM a WHERE a.offer = 1", 22, "syntax", "two to four aliases"),
        ("SELECT b.offer FROM a AND b AND c AND d AND e WHERE a.offer = 1", 44, "too_many",
         "at most 4"),
        ("SELECT b.offer FROM a AND a WHERE a.offer = 1", 26, "duplicate", "already used"),
        # a pattern's word after FROM makes form 3, read as a pattern from there
        ("SELECT b.offer FROM a AND next WHERE a.offer = 1", 20, "syntax", "expected a source"),
        ("SELECT c.offer FROM a AND b WHERE a.offer = 1", 7, "unknown_alias", "not an alias"),
        ("SELECT b.lot FROM a AND b WHERE a.offer = 1", 9, "unknown_attribute", "unknown"),
        ("SELECT b.offer AS o FROM a AND b WHERE a.offer = 1", 15, "syntax", "no AS"),
        ("SELECT offer FROM a AND b WHERE a.offer = 1", 7, "syntax", "alias.attr items"),
        ("SELECT b.offer FROM a AND b", 27, "syntax", "expected WHERE"),
        ("SELECT b.offer FROM a AND b WHERE offer = 1", 34, "unknown_alias", "name the alias"),
        ("SELECT b.offer FROM a AND b WHERE c.offer = 1", 34, "unknown_alias", "not an alias"),
        ("SELECT b.offer FROM a AND b WHERE a.offer = a.trade", 34, "bad_join", "two different"),
        ("SELECT b.offer FROM a AND b WHERE a.subject = b.price", 44, "type_mismatch", "one type"),
        ("SELECT b.offer FROM a AND b WHERE (a.offer = 1 OR b.offer = 2)", 34, "syntax",
         "names one alias"),
        ("SELECT b.offer FROM a AND b WHERE c.start_time = NOW", 34, "unknown_alias", "not an"),
        ("SELECT * WHERE a.start_time = NOW", 15, "unknown_alias", "composite"),
    ],
)  # fmt: skip
def test_errors_name_what_and_where(text, position, code, fragment):
    with pytest.raises(QueryError) as info:
        parse_query(text)
    err = info.value
    assert (err.position, err.code) == (position, code), err
    assert fragment in err.message


def test_limits_fail_fast():
    with pytest.raises(QueryError) as info:
        parse_query("SELECT * WHERE " + "price > 1, " * 2000)
    assert (info.value.code, info.value.position) == ("too_long", MAX_LENGTH)
    conjuncts = ", ".join(["offer = 1"] * (MAX_CONJUNCTS + 1))
    with pytest.raises(QueryError) as info:
        parse_query("SELECT * WHERE " + conjuncts)
    assert info.value.code == "too_many"
    assert info.value.position == len("SELECT * WHERE ") + MAX_CONJUNCTS * len("offer = 1, ")
    parse_query("SELECT * WHERE " + ", ".join(["offer = 1"] * MAX_CONJUNCTS))
    with pytest.raises(QueryError) as info:
        parse_query(
            "SELECT * WHERE ("
            + " AND ".join(f"(offer = {i} OR price = {i})" for i in range(7))
            + ")"
        )
    assert info.value.code == "too_many_disjuncts"


def test_a_timestamp_bound_is_absolute():
    q = parse_query("SELECT * WHERE start_time = TIMESTAMP '2026-11-20T10:00:00Z'")
    assert q.time.start == TimeBound(0, dt.datetime(2026, 11, 20, 10, tzinfo=dt.UTC))


PIECES = [
    "SELECT", "*", "price", "a.price", "b.subject", "subject", "AS", "p", "avg", "AVG(price, 2)",
    "COUNT(offer, 3)", "WHERE", "FROM", "a", "AND", "b", "OR", "NOT", "(", ")", ",", "=", "!=",
    "<", ">=", "1.05", "-3", "'trade'", "'office.>'", "'a..b'", "MATCHES", "BETWEEN", "IN", "[",
    "start_time", "end_time", "a.start_time", "NOW", "-", "+", "25m", "TIMESTAMP",
    "'2026-11-20T10:00:00Z'", "GROUP", "BY", "HAVING", "RESET", "offers", "NEXT", "{", "}",
    "\"limit\"", "''", "1e3", "type", "time", "quantity_max", "2000",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.booleans())
def test_any_text_parses_or_fails_with_a_located_error(pieces, glue):
    parses_back_or_fails_located("SELECT " + (" " if glue else "").join(pieces))


def parses_back_or_fails_located(text):
    """``text`` is refused with a message and a position inside it, or its canonical text
    parses back to the same query (shared with form 4's test)."""
    try:
        q = parse_query(text)
    except QueryError as exc:
        assert 0 <= exc.position <= len(text), exc
        assert exc.message
        return
    assert parse_query(to_text(q)) == q


@given(st.text(max_size=40))
def test_arbitrary_characters_never_crash_the_parser(text):
    try:
        parse_query(text)
    except QueryError as exc:
        assert 0 <= exc.position <= len(text)
