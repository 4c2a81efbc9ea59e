"""A subscription's conjunct reads as the SPEC 2 constraint it spells (SPEC 8.3).

Each generated conjunct is written twice with every character at the same place: once in
the subscription language (``a.price``, ``subject MATCHES 'p'``) and once as the plain
constraint it stands for (``  price``, and ``_m<k> >= 0`` padded to the ``MATCHES``
atom's width, a made-up int attribute whose interval holds 0 where the match holds).
``matching.parse`` of the second, its attributes given back their alias and its
placeholders read back as subject tests, is what ``ConditionReader`` must give for the
first: the same tests in the same order, or the same error at the same character.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import matching
from matching import ConstraintError, Interval, Type
from matching.subscriptions.errors import QueryError
from matching.subscriptions.language.conditions import ConditionReader
from matching.subscriptions.language.cursor import Cursor
from matching.subscriptions.language.lexer import tokenize
from matching.subscriptions.language.model import AttrTest, Condition, SubjectTest, Test
from matching.subscriptions.language.schema import EVENT_SCHEMA

ATTRIBUTES = sorted(EVENT_SCHEMA)
LITERALS = {
    Type.INT: ["0", "7", "-3", "12"],
    Type.DECIMAL: ["1.00", "1.05", "-0.5", "2", "1.5e3"],
    Type.STRING: ["'trade'", "'a''b'", "''", "'office.supplies'"],
    Type.TIMESTAMP: ["TIMESTAMP '2026-11-20T10:00:00Z'", "timestamp '2026-11-21T00:00:00Z'"],
}
PATTERNS = ["office.>", "office.*.pens", "garden.tools", "*"]


class _Written:
    """The two spellings of a conjunct being generated, kept the same length."""

    def __init__(self) -> None:
        self.query: list[str] = []
        self.constraint: list[str] = []
        self.placeholders: dict[str, str] = {}

    def add(self, query: str, constraint: str | None = None) -> None:
        constraint = query if constraint is None else constraint
        assert len(constraint) <= len(query)
        self.query.append(query)
        self.constraint.append(constraint.ljust(len(query)))


def _keyword(draw: Any, word: str) -> str:
    return draw(st.sampled_from([word.upper(), word.lower(), word.capitalize()]))


def _space(draw: Any) -> str:
    return draw(st.sampled_from([" ", " ", "  "]))


def _literal(draw: Any, t: Type) -> str:
    # mostly of the attribute's type; now and then another, whose error must match too
    if draw(st.integers(0, 9)) == 0:
        t = draw(st.sampled_from(sorted(LITERALS, key=lambda x: x.value)))
    return draw(st.sampled_from(LITERALS[t]))


def _reference(draw: Any, out: _Written, alias: str | None, attribute: str) -> None:
    if alias is not None:
        out.add(f"{alias}.", "")
        out.add(attribute)
    elif draw(st.integers(0, 5)) == 0:
        out.add('"' + attribute + '"')
    else:
        out.add(attribute)


def _atom(draw: Any, out: _Written, alias: str | None) -> None:
    shape = draw(st.sampled_from(["cmp", "cmp", "between", "in", "wildcard", "matches"]))
    if shape == "matches":
        pattern = draw(st.sampled_from(PATTERNS))
        name = f"_m{len(out.placeholders)}"
        out.placeholders[name] = pattern
        prefix = "" if alias is None else f"{alias}."
        written = f"{prefix}subject {_keyword(draw, 'matches')} '{pattern}'"
        out.add(written, f"{name} >= 0")
        return
    attribute = draw(st.sampled_from(ATTRIBUTES))
    t = EVENT_SCHEMA[attribute]
    _reference(draw, out, alias, attribute)
    out.add(_space(draw))
    if shape == "cmp":
        out.add(draw(st.sampled_from(["=", "!=", "<>", "<", "<=", ">", ">="])))
        out.add(_space(draw))
        out.add(_literal(draw, t))
    elif shape == "wildcard":
        out.add(draw(st.sampled_from(["=", "=", "!=", "<"])))
        out.add(_space(draw))
        out.add("*")
    elif shape == "between":
        out.add(_keyword(draw, "between"))
        out.add(_space(draw))
        out.add(_literal(draw, t))
        out.add(" " + _keyword(draw, "and") + " ")
        out.add(_literal(draw, t))
    else:
        out.add(_keyword(draw, "in") + _space(draw))
        out.add(draw(st.sampled_from(["[", "("])))
        out.add(_literal(draw, t))
        out.add(", ")
        out.add(_literal(draw, t))
        out.add(draw(st.sampled_from(["]", ")"])))


def _expression(draw: Any, out: _Written, alias: str | None, depth: int) -> None:
    shape = draw(st.sampled_from(["atom", "atom", "not", "and", "or", "group"]))
    if depth <= 0 or shape == "atom":
        _atom(draw, out, alias)
    elif shape == "not":
        out.add(_keyword(draw, "not") + _space(draw))
        _expression(draw, out, alias, depth - 1)
    elif shape == "group":
        _group(draw, out, alias, depth - 1)
    else:
        for k in range(draw(st.integers(2, 3))):
            if k:
                out.add(" " + _keyword(draw, shape) + " ")
            if draw(st.booleans()):
                _group(draw, out, alias, depth - 1)
            else:
                _expression(draw, out, alias, 0)


def _group(draw: Any, out: _Written, alias: str | None, depth: int) -> None:
    out.add("(")
    _expression(draw, out, alias, depth)
    out.add(")")


@st.composite
def conjuncts(
    draw: Any,
) -> tuple[str, str, dict[str, str], tuple[str, ...] | None, str | None]:
    aliases = draw(st.sampled_from([None, ("a", "b"), ("first", "second")]))
    alias = None if aliases is None else draw(st.sampled_from(aliases))
    out = _Written()
    if draw(st.booleans()):
        _group(draw, out, alias, 3)
    else:
        _atom(draw, out, alias)
    return "".join(out.query), "".join(out.constraint), out.placeholders, aliases, alias


def _expected(
    constraint_text: str, placeholders: dict[str, str], alias: str | None
) -> Condition | QueryError:
    schema = dict(EVENT_SCHEMA)
    schema.update({name: Type.INT for name in placeholders})
    try:
        constraint = matching.parse(constraint_text, schema=schema)
    except ConstraintError as exc:
        return QueryError(exc.message, exc.position or 0, code=exc.code)
    disjuncts: list[tuple[Test, ...]] = []
    for disjunct in constraint:
        tests: list[Test] = []
        for attr, pred in disjunct:
            if attr.name in placeholders:
                assert isinstance(pred, Interval)
                lo: Any = pred.lo
                hi: Any = pred.hi
                holds = (lo is None or lo <= 0) and (hi is None or hi >= 0)
                tests.append(SubjectTest(alias, placeholders[attr.name], negated=not holds))
            else:
                tests.append(AttrTest(alias, attr.name, attr.type, pred))
        if tuple(tests) not in disjuncts:
            disjuncts.append(tuple(tests))
    return Condition(tuple(disjuncts))


def _read(query_text: str, aliases: tuple[str, ...] | None) -> Condition | QueryError:
    cur = Cursor(query_text, tokenize(query_text))
    try:
        condition = ConditionReader(cur, EVENT_SCHEMA, aliases).conjunct()
    except QueryError as exc:
        return exc
    assert cur.i == len(cur.tokens) - 1, "the conjunct was not read to its end"
    return condition


def _outcome(result: Condition | QueryError) -> object:
    if isinstance(result, QueryError):
        return ("error", result.message, result.position, result.code)
    return result


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conjuncts())
def test_a_conjunct_reads_as_the_constraint_it_spells(case):
    query_text, constraint_text, placeholders, aliases, alias = case
    expected = _expected(constraint_text, placeholders, alias)
    assert _outcome(_read(query_text, aliases)) == _outcome(expected), (query_text, constraint_text)


def test_the_two_spellings_line_up():
    # the generator's own check: an alias and a MATCHES atom keep every later position
    out = _Written()
    out.add("a.", "")
    out.add("subject MATCHES 'office.>'", "_m0 >= 0")
    out.add(" AND ")
    assert "".join(out.query) == "a.subject MATCHES 'office.>' AND "
    assert "".join(out.constraint) == "  _m0 >= 0                   AND "


def _error(query_text: str, aliases: tuple[str, ...] | None = None) -> tuple[str, int | None]:
    result = _read(query_text, aliases)
    assert isinstance(result, QueryError), result
    return result.code, result.position


def test_a_wrong_name_is_refused_before_an_earlier_literal_of_the_wrong_type():
    # syntax and names are refused as they are read, types once the conjunct is read
    assert _error("(price > 'abc' OR pricee > 1)") == ("unknown_attribute", 18)
    assert _error("(price > 'abc' OR price > 1)") == ("type_mismatch", 9)
    assert _error("(price > 1e999999 OR price >)") == ("syntax", 28)
    assert _error("(price > 1e999999 OR price > 2)") == ("bad_literal", 9)


def test_an_error_about_an_aliased_comparison_points_at_the_attribute_after_the_alias():
    assert _error("(a.price BETWEEN 5 AND 1 OR a.subject MATCHES 'x.>')", ("a", "b")) == (
        "empty_range",
        3,
    )
