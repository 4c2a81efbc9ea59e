"""Form 4 of SPEC 8.3 (watches over open offers): what queries parse to, their canonical
text, and every refused shape with its code and position."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matching import Interval, Type, Wildcard
from matching.subscriptions import Kind, QueryError, WatchQuery, parse_query, to_text
from matching.subscriptions.language.model import AttrTest, Condition, SubjectTest, Threshold
from tests.matching.subscriptions.test_subscription_parse import parses_back_or_fails_located

PENCILS = "office.supplies.pencils"


def cond(*tests):
    return Condition((tuple(tests),))


def subject_is(subject):
    return cond(AttrTest(None, "subject", Type.STRING, Interval(subject, True, subject, True)))


def dec(attribute, lo, lo_closed, hi, hi_closed):
    lo = None if lo is None else Decimal(lo)
    hi = None if hi is None else Decimal(hi)
    return cond(AttrTest(None, attribute, Type.DECIMAL, Interval(lo, lo_closed, hi, hi_closed)))


def test_the_range_min_example():
    q = parse_query(
        f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}' "
        "AND quantity_max BETWEEN 2000 AND 10000"
    )
    assert q == WatchQuery(
        "ask",
        "MIN",
        None,
        (subject_is(PENCILS), dec("quantity_max", "2000", True, "10000", True)),
        None,
    )
    assert q.kind is Kind.STATE
    assert q.key == "quantity_max"
    assert to_text(q) == (
        f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}', "
        "quantity_max BETWEEN 2000 AND 10000"
    )


def test_the_value_based_example():
    q = parse_query("SELECT best_value FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY 5%")
    assert q == WatchQuery("best_value", None, 1, (), Threshold(Decimal(5), True))
    assert q.kind is Kind.STATE and q.key is None
    assert to_text(q) == "SELECT best_value FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY 5%"


def test_max_a_pattern_several_key_conjuncts_and_an_absolute_threshold():
    q = parse_query(
        "select max(best_value) from offers where subject matches 'office.>', "
        "ask >= 1, (ask < 2.5) notify when changed by 0.05"
    )
    assert q == WatchQuery(
        "best_value",
        "MAX",
        None,
        (
            cond(SubjectTest(None, "office.>")),
            dec("ask", "1", True, None, False),
            dec("ask", None, False, "2.5", False),
        ),
        Threshold(Decimal("0.05")),
    )
    assert to_text(q) == (
        "SELECT MAX(best_value) FROM offers WHERE subject MATCHES 'office.>', ask >= 1, "
        "ask < 2.5 NOTIFY WHEN CHANGED BY 0.05"
    )


def test_the_key_is_optional_and_may_be_a_presence_test_or_an_int():
    q = parse_query(f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}'")
    assert q == WatchQuery("ask", "MIN", None, (subject_is(PENCILS),))
    assert q.key is None
    q = parse_query(f"SELECT MIN(ask) FROM offers WHERE quantity_max = *, subject = '{PENCILS}'")
    assert q.conditions[0] == cond(AttrTest(None, "quantity_max", Type.DECIMAL, Wildcard()))
    assert q.key == "quantity_max"
    q = parse_query(
        f"SELECT MAX(matching_bids) FROM offers WHERE subject = '{PENCILS}' AND offer IN [3, 9)"
    )
    assert q.conditions[1] == cond(AttrTest(None, "offer", Type.INT, Interval(3, True, 8, True)))
    assert to_text(q) == (
        f"SELECT MAX(matching_bids) FROM offers WHERE subject = '{PENCILS}', offer BETWEEN 3 AND 8"
    )


def test_not_pushed_down_to_one_range_is_accepted():
    q = parse_query(f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}', (NOT ask > 2)")
    assert q.conditions[1] == dec("ask", None, False, "2", True)


def test_a_parenthesized_conjunction_of_subject_and_key():
    q = parse_query(f"SELECT MIN(ask) FROM offers WHERE (subject = '{PENCILS}' AND ask > 1)")
    assert q.key == "ask"
    assert parse_query(to_text(q)) == q


def test_an_empty_key_range_is_accepted_and_matches_nothing():
    # As in form 1, each conjunct is normalized on its own (SPEC 8.3's fine points).
    q = parse_query(f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}', ask > 5, ask < 3")
    assert len(q.conditions) == 3


@pytest.mark.parametrize(
    ("text", "position", "code", "fragment"),
    [
        # the subject
        ("SELECT MIN(ask) FROM offers", 27, "bad_subject", "needs WHERE and a subject"),
        ("SELECT MIN(ask) FROM offers WHERE ask > 1", 28, "bad_subject", "needs its subject"),
        ("SELECT MIN(ask) FROM offers NOTIFY WHEN CHANGED BY 1", 28, "bad_subject",
         "needs WHERE and a subject"),
        ("SELECT MIN(ask) FROM offers WHERE subject > 'a'", 34, "bad_subject", "not a range"),
        ("SELECT MIN(ask) FROM offers WHERE subject = *", 34, "bad_subject", "not a range"),
        ("SELECT MIN(ask) FROM offers WHERE (NOT subject MATCHES 'a.>')", 34, "bad_subject",
         "not its negation"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'Office.x'", 45, "bad_subject", ""),
        ("SELECT MIN(ask) FROM offers WHERE subject MATCHES 'a..b'", 53, "bad_pattern", ""),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', subject MATCHES 'a'", 49,
         "duplicate", "already given at character 35"),
        ("SELECT MIN(ask) FROM offers WHERE subject != 'a'", 42, "bad_operator", "range"),
        # the key
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', ask != 1", 53, "bad_operator",
         "!= would leave two ranges"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', (ask <> 1)", 54, "bad_operator",
         "<>"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', (ask < 1 OR ask > 2)", 49, "bad_key",
         "one range"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', (NOT ask BETWEEN 1 AND 2)", 49,
         "bad_key", "one range"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', ask > 1, quantity_max < 5", 58,
         "bad_key", "one key and it is ask"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', closes_at > TIMESTAMP "
         "'2026-11-20T10:00:00Z'", 49, "bad_key", "closes_at is timestamp"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', price > 1", 49, "unknown_attribute",
         "the attributes are ask, best_value"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', start_time = NOW", 49,
         "unknown_attribute", "takes no start_time"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a', ask > 'x'", 55, "type_mismatch", ""),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a' OR ask > 1", 48, "syntax",
         "only inside parentheses"),
        # the selected attribute
        ("SELECT MIN(subject) FROM offers WHERE subject = 'a'", 11, "type_mismatch",
         "subject is string: a watch selects a numeric attribute"),
        ("SELECT MIN(closes_at) FROM offers WHERE subject = 'a'", 11, "type_mismatch", ""),
        ("SELECT MIN(price) FROM offers WHERE subject = 'a'", 11, "unknown_attribute",
         "best_value"),
        ("SELECT MIN(ask, 3) FROM offers WHERE subject = 'a'", 14, "bad_aggregate",
         "takes the attribute alone"),
        ("SELECT AVG(ask, 3) FROM offers WHERE subject = 'a'", 7, "bad_aggregate",
         "MIN(attr) or MAX(attr), not AVG"),
        ("SELECT * FROM offers WHERE subject = 'a'", 7, "syntax", "not *"),
        ("SELECT MIN(ask) AS m FROM offers WHERE subject = 'a'", 16, "syntax", "no AS"),
        ("SELECT MIN(ask), MAX(ask) FROM offers WHERE subject = 'a'", 15, "syntax",
         "selects one thing"),
        ("SELECT MIN ask FROM offers WHERE subject = 'a'", 11, "syntax", "'(' after MIN"),
        # single-offer watches
        ("SELECT ask FROM offers", 22, "syntax", "names its offer"),
        ("SELECT ask FROM offers WHERE subject = 'a'", 29, "syntax", "selects MIN(attr)"),
        ("SELECT ask FROM offers WHERE offer > 1", 35, "syntax", "'=' and the offer's id"),
        ("SELECT ask FROM offers WHERE offer = 1.5", 37, "bad_literal", "whole number"),
        ("SELECT ask FROM offers WHERE offer = 0", 37, "bad_literal", "from 1 up"),
        ("SELECT ask FROM offers WHERE offer = 'x'", 37, "syntax", "the offer's id"),
        ("SELECT ask FROM offers WHERE offer = 1, ask > 1", 38, "syntax", "no other condition"),
        ("SELECT subject FROM offers WHERE offer = 1", 7, "type_mismatch", "numeric"),
        # NOTIFY
        ("SELECT ask FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY -1", 62,
         "bad_threshold", "0 or more"),
        ("SELECT ask FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED 5", 59, "syntax",
         "BY after NOTIFY WHEN CHANGED"),
        ("SELECT ask FROM offers WHERE offer = 1 NOTIFY CHANGED BY 5", 46, "syntax",
         "WHEN after NOTIFY"),
        ("SELECT ask FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY x", 62, "syntax",
         "the threshold"),
        ("SELECT ask FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY 1e3", 62, "type_mismatch",
         "exponent"),
        ("SELECT ask FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY 5% 6", 65, "syntax",
         "expected the end of the query; found the number 6"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a' NOTIFY WHEN CHANGED BY 5 AND ask > 1",
         73, "syntax", "expected the end of the query; found the keyword AND"),
        ("SELECT ask FROM offers WHERE offer = 1 AS", 39, "syntax",
         "expected NOTIFY WHEN CHANGED BY or the end of the query; found the keyword AS"),
        ("SELECT MIN(ask) FROM offers WHERE subject = 'a' GROUP BY ask", 48, "syntax",
         "',' or AND and another conjunct, NOTIFY WHEN CHANGED BY or the end"),
    ],
)  # fmt: skip
def test_refusals_name_what_and_where(text, position, code, fragment):
    with pytest.raises(QueryError) as info:
        parse_query(text)
    err = info.value
    assert (err.position, err.code) == (position, code), err
    assert fragment in err.message


def test_limits_fail_fast():
    key = ", ".join(["ask > 1"] * 63)
    parse_query(f"SELECT MIN(ask) FROM offers WHERE subject = 'a', {key}")
    with pytest.raises(QueryError) as info:
        parse_query(f"SELECT MIN(ask) FROM offers WHERE subject = 'a', {key}, ask > 1")
    prefix = "SELECT MIN(ask) FROM offers WHERE subject = 'a', "
    assert (info.value.code, info.value.position) == ("too_many", len(prefix) + 63 * 9)


def test_a_form_2_query_over_an_alias_named_offers_is_still_form_2():
    q = parse_query("SELECT a.price FROM offers AND a WHERE a.type = 'trade'")
    assert q.kind is Kind.COMPOSITE


ATTRIBUTES = ["ask", "best_value", "quantity_min", "quantity_max", "matching_bids", "offer"]
KEY_PREDICATES = [
    "{k} BETWEEN 1 AND 5", "{k} >= 2", "{k} > 2", "{k} < 8", "{k} <= 7", "{k} = 3",
    "{k} IN (1, 4]", "{k} = *", "(NOT {k} < 2)",
]  # fmt: skip
SUBJECTS = ["subject = 'office.supplies.pencils'", "subject MATCHES 'office.>'",
            "subject MATCHES '*.tools.*'"]  # fmt: skip


@st.composite
def watches(draw):
    threshold = draw(st.sampled_from(["", " NOTIFY WHEN CHANGED BY 0", " NOTIFY WHEN CHANGED BY 5%",
                                      " NOTIFY WHEN CHANGED BY 0.25", " notify when changed by 1.50%"]))  # fmt: skip
    attribute = draw(st.sampled_from(ATTRIBUTES))
    if draw(st.booleans()):
        return (
            f"SELECT {attribute} FROM offers WHERE offer = {draw(st.integers(1, 10**6))}{threshold}"
        )
    key = draw(st.sampled_from(ATTRIBUTES))
    conjuncts = [
        p.format(k=key) for p in draw(st.lists(st.sampled_from(KEY_PREDICATES), max_size=3))
    ]
    conjuncts.insert(draw(st.integers(0, len(conjuncts))), draw(st.sampled_from(SUBJECTS)))
    glue = draw(st.sampled_from([", ", " AND "]))
    func = draw(st.sampled_from(["MIN", "MAX", "min"]))
    return f"SELECT {func}({attribute}) FROM offers WHERE {glue.join(conjuncts)}{threshold}"


@settings(max_examples=300, deadline=None)
@given(watches())
def test_canonical_text_parses_back_to_the_same_watch(text):
    q = parse_query(text)
    assert isinstance(q, WatchQuery)
    canonical = to_text(q)
    assert parse_query(canonical) == q
    assert to_text(parse_query(canonical)) == canonical


PIECES = [
    "MIN(ask)", "MAX(best_value)", "ask", "offer", "FROM", "offers", "WHERE", "subject", "=",
    "'office.supplies.pencils'", "MATCHES", "'office.>'", ",", "AND", "OR", "NOT", "(", ")",
    "quantity_max", "BETWEEN", "2000", "10000", "!=", "<", ">=", "1", "-1", "NOTIFY", "WHEN",
    "CHANGED", "BY", "5", "%", "*", "IN", "[", "]", "closes_at", "AS",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.booleans())
def test_any_text_parses_or_fails_with_a_located_error(pieces, glue):
    parses_back_or_fails_located("SELECT " + (" " if glue else "").join(pieces))
