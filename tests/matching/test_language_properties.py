"""Property-based tests (hypothesis) of the language and the semantics.

Generated constraint trees are rendered as text and as JSON, parsed, and checked
against an evaluator written here, independently of the implementation:

* normalization keeps the point-set of the written constraint;
* ``matches`` agrees with a brute-force search over every value that matters;
* printing and parsing round-trip; the JSON form means the same as the text;
* the parser raises nothing but ``ConstraintError``, whatever it is given.

The ordered domains are tiny so that the brute force is exact: every bound, a
value between each pair of neighbouring bounds and a value beyond either end.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from decimal import Decimal

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from matching import (
    ConstraintError,
    Interval,
    Type,
    Wildcard,
    agree,
    matches,
    matching_disjunct_pairs,
    parse,
    to_json,
    to_text,
)

SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)

# -- small ordered domains --------------------------------------------------------------------

DAY = dt.timedelta(days=1)
D0 = dt.date(2026, 1, 1)
DOMAINS = {
    "a": (Type.INT, list(range(6))),
    "b": (Type.DECIMAL, [Decimal(f"{k / 2:.1f}") for k in range(7)]),
    "c": (Type.DATE, [D0 + k * DAY for k in range(6)]),
    "s": (Type.STRING, ["", "a", "a'", "ab", "b", "c"]),
}


def _candidates(t, values):
    """Every value that can decide membership for intervals with bounds in ``values``."""
    if t is Type.INT:
        return list(range(min(values) - 1, max(values) + 2))
    if t is Type.DATE:
        return [values[0] - DAY, *values, values[-1] + DAY]
    if t is Type.DECIMAL:
        quarter = Decimal("0.25")
        return [values[0] - quarter + k * quarter for k in range(2 * len(values) + 1)]
    # strings: v + '\x01' lies between v and the next larger value here; '' is the minimum
    return sorted({*values, *(v + "\x01" for v in values), "d"})


CANDIDATES = {name: _candidates(t, values) for name, (t, values) in DOMAINS.items()}


def literal(t, v):
    if t is Type.INT:
        return str(v)
    if t is Type.DECIMAL:
        return format(v, "f")
    if t is Type.DATE:
        return f"DATE '{v.isoformat()}'"
    return "'" + v.replace("'", "''") + "'"


def json_value(t, v):
    if t is Type.DATE:
        return {"date": v.isoformat()}
    return v


# A tree is ("atom", name, op, v, w, bounds) | ("not", tree) | ("and"|"or", [trees]).
OPS = ["=", "!=", "<", "<=", ">", ">=", "BETWEEN", "IN", "*"]


@st.composite
def ordered_atoms(draw, names):
    name = draw(st.sampled_from(names))
    _, values = DOMAINS[name]
    op = draw(st.sampled_from(OPS))
    v, w = sorted(draw(st.lists(st.sampled_from(values), min_size=2, max_size=2)))
    bounds = draw(st.sampled_from(["[]", "[)", "(]", "()"]))
    return ("atom", name, op, v, w, bounds)


def trees(names, max_leaves=6):
    return st.recursive(
        ordered_atoms(names),
        lambda kids: st.one_of(
            st.tuples(st.just("not"), kids),
            st.tuples(st.sampled_from(["and", "or"]), st.lists(kids, min_size=2, max_size=3)),
        ),
        max_leaves=max_leaves,
    )


def render(tree):
    kind = tree[0]
    if kind == "atom":
        _, name, op, v, w, bounds = tree
        t, _ = DOMAINS[name]
        if op == "*":
            return f"{t.value} {name} = *"
        if op == "BETWEEN":
            return f"{name} BETWEEN {literal(t, v)} AND {literal(t, w)}"
        if op == "IN":
            return f"{name} IN {bounds[0]}{literal(t, v)}, {literal(t, w)}{bounds[1]}"
        return f"{name} {op} {literal(t, v)}"
    if kind == "not":
        return f"NOT ({render(tree[1])})"
    return f" {kind.upper()} ".join(f"({render(child)})" for child in tree[1])


JSON_OPS = {"=": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def render_json(tree):
    kind = tree[0]
    if kind == "atom":
        _, name, op, v, w, bounds = tree
        t, _ = DOMAINS[name]
        if op == "*":
            return {f"{t.value} {name}": "*"}
        if op == "BETWEEN":
            return {name: {"between": [json_value(t, v), json_value(t, w)]}}
        if op == "IN":
            return {
                name: {"in": {"lo": json_value(t, v), "hi": json_value(t, w), "bounds": bounds}}
            }
        return {name: {JSON_OPS[op]: json_value(t, v)}}
    if kind == "not":
        return {"not": render_json(tree[1])}
    return {"all_of" if kind == "and" else "any_of": [render_json(c) for c in tree[1]]}


def evaluate(tree, point):
    kind = tree[0]
    if kind == "atom":
        _, name, op, v, w, bounds = tree
        x = point[name]
        return {
            "=": lambda: x == v,
            "!=": lambda: x != v,
            "<": lambda: x < v,
            "<=": lambda: x <= v,
            ">": lambda: x > v,
            ">=": lambda: x >= v,
            "BETWEEN": lambda: v <= x <= w,
            "IN": lambda: (
                (v <= x if bounds[0] == "[" else v < x) and (x <= w if bounds[1] == "]" else x < w)
            ),
            "*": lambda: True,
        }[op]()
    if kind == "not":
        return not evaluate(tree[1], point)
    results = (evaluate(child, point) for child in tree[1])
    return all(results) if kind == "and" else any(results)


def names_in(tree):
    if tree[0] == "atom":
        return {tree[1]}
    if tree[0] == "not":
        return names_in(tree[1])
    return set().union(*(names_in(child) for child in tree[1]))


def contains(pred, x):
    """Membership in a normalized ordered predicate, from its fields alone."""
    if isinstance(pred, Wildcard):
        return True
    assert isinstance(pred, Interval)
    if pred.lo is not None and (x < pred.lo or (x == pred.lo and not pred.lo_closed)):
        return False
    return not (pred.hi is not None and (x > pred.hi or (x == pred.hi and not pred.hi_closed)))


def satisfies(constraint, point):
    return any(
        all(contains(pred, point[attr.name]) for attr, pred in d.items)
        for d in constraint.disjuncts
    )


def parse_or_skip(text):
    """The constraint, or skip the example on the errors a generator cannot avoid cheaply."""
    try:
        return parse(text)
    except ConstraintError as error:
        assume(error.code not in ("empty_range", "too_many_disjuncts", "cannot_negate"))
        raise


# -- normalization keeps the meaning ----------------------------------------------------------


@SETTINGS
@given(tree=trees(["a", "b", "c", "s"]))
def test_normalization_keeps_the_point_set(tree):
    text = render(tree)
    names = sorted(names_in(tree))
    assume(len(names) <= 3)
    grid = [
        dict(zip(names, values, strict=True))
        for values in itertools.product(*(CANDIDATES[n] for n in names))
    ]

    try:
        constraint = parse_or_skip(text)
    except ConstraintError as error:
        # the only error left is "unsatisfiable", and then no point satisfies the tree
        assert error.code == "unsatisfiable"
        assert not any(evaluate(tree, point) for point in grid)
        return

    for point in grid:
        assert satisfies(constraint, point) == evaluate(tree, point), (text, point)


@SETTINGS
@given(tree=trees(["a", "b", "c", "s"]))
def test_json_form_means_the_same_as_the_text(tree):
    def outcome(source):
        try:
            return parse(source)
        except ConstraintError as error:
            return error.code

    assert outcome(render_json(tree)) == outcome(render(tree))


# -- matching equals brute force ----------------------------------------------------------------


def brute_force_pairs(publication, subscription):
    pairs = []
    for i, dp in enumerate(publication.disjuncts):
        for j, ds in enumerate(subscription.disjuncts):
            sub = ds.mapping
            if all(
                attr in sub
                and any(contains(p, x) and contains(sub[attr], x) for x in CANDIDATES[attr.name])
                for attr, p in dp.items
            ):
                pairs.append((i, j))
    return pairs


@SETTINGS
@given(
    p=trees(["a", "b", "c", "s"], max_leaves=4),
    s=trees(["a", "b", "c", "s"], max_leaves=5),
)
def test_matches_agrees_with_brute_force(p, s):
    try:
        publication, subscription = parse_or_skip(render(p)), parse_or_skip(render(s))
    except ConstraintError:
        assume(False)

    expected = brute_force_pairs(publication, subscription)

    assert matching_disjunct_pairs(publication, subscription) == expected
    assert matches(publication, subscription) is bool(expected)

    # and the agreement of each matching pair is exactly the intersection
    for i, j in expected:
        dp, ds = publication.disjuncts[i], subscription.disjuncts[j]
        agreement = agree(dp, ds)
        for attr, (pred,) in agreement.items:
            both = [
                x
                for x in CANDIDATES[attr.name]
                if (dp.get(attr) is None or contains(dp.get(attr), x))
                and (ds.get(attr) is None or contains(ds.get(attr), x))
            ]
            assert [x for x in CANDIDATES[attr.name] if contains(pred, x)] == both
            top = agreement.max_value(attr)
            if top is not None:
                assert top == max(both)


# -- printing round-trips -------------------------------------------------------------------------

NAMES = ["x", "X", "lot", "_a1", '"unit price"', '"date"', '"a""b"', '"  "', '"AND"']
UTC = dt.UTC
finite = st.floats(allow_nan=False, allow_infinity=False)
text_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")


def _float_text(f):
    return repr(f)


VALUES = {
    Type.INT: st.integers(-(2**63), 2**63 - 1).map(str),
    Type.DECIMAL: st.decimals(-(10**30), 10**30, places=3).map(lambda d: format(d, "f")),
    Type.FLOAT: st.one_of(finite.map(_float_text), st.integers(-(10**20), 10**20).map(str)),
    Type.DATE: st.dates().map(lambda d: f"DATE '{d.isoformat()}'"),
    Type.TIMESTAMP: st.datetimes(
        min_value=dt.datetime(2, 1, 1), max_value=dt.datetime(9998, 12, 31)
    ).map(lambda d: f"TIMESTAMP '{d.isoformat()}'"),
    Type.STRING: st.text(text_chars, max_size=8).map(lambda s: "'" + s.replace("'", "''") + "'"),
}
coordinate = st.one_of(finite.map(_float_text), st.integers(-1000, 1000).map(str))


@st.composite
def any_atoms(draw):
    name = draw(st.sampled_from(NAMES))
    t = draw(st.sampled_from(list(Type)))
    prefix = f"{t.value} "
    if t is Type.POINT:
        if draw(st.booleans()):
            return f"{prefix}{name} = POINT({draw(coordinate)}, {draw(coordinate)})"
        box = ", ".join(draw(coordinate) for _ in range(4))
        return f"{prefix}{name} {draw(st.sampled_from(['WITHIN', '= *']))} BOX({box})".replace(
            "= * BOX(" + box + ")", "= *"
        )
    if t is Type.BOX:
        op = draw(st.sampled_from(["=", "OVERLAPS", "CONTAINS", "WITHIN", "= *"]))
        if op == "= *":
            return f"{prefix}{name} = *"
        box = ", ".join(draw(coordinate) for _ in range(4))
        return f"{prefix}{name} {op} BOX({box})"
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "BETWEEN", "IN", "*"]))
    if op == "*":
        return f"{prefix}{name} = *"
    v, w = draw(VALUES[t]), draw(VALUES[t])
    if op == "BETWEEN":
        return f"{prefix}{name} BETWEEN {v} AND {w}"
    if op == "IN":
        return (
            f"{prefix}{name} IN {draw(st.sampled_from('[('))}{v}, {w}{draw(st.sampled_from('])'))}"
        )
    return f"{prefix}{name} {op} {v}"


any_texts = st.recursive(
    any_atoms(),
    lambda kids: st.one_of(
        kids.map(lambda k: f"NOT ({k})"),
        st.lists(kids, min_size=2, max_size=3).map(lambda ks: " AND ".join(f"({k})" for k in ks)),
        st.lists(kids, min_size=2, max_size=3).map(lambda ks: " OR ".join(f"({k})" for k in ks)),
    ),
    max_leaves=6,
)


def check_round_trip(constraint):
    text = to_text(constraint)
    again = parse(text)
    assert again == constraint, text
    assert to_text(again) == text
    obj = to_json(constraint)
    assert parse(obj) == constraint
    assert parse(json.loads(json.dumps(obj))) == constraint
    assert parse(json.loads(json.dumps(obj), parse_float=Decimal)) == constraint


@SETTINGS
@given(text=any_texts)
def test_text_to_constraint_to_text_is_stable(text):
    try:
        constraint = parse(text)
    except ConstraintError:
        assume(False)

    check_round_trip(constraint)


@SETTINGS
@given(tree=trees(["a", "b", "c", "s"]))
def test_round_trip_of_ordered_constraints(tree):
    try:
        constraint = parse(render(tree))
    except ConstraintError:
        assume(False)

    check_round_trip(constraint)


# -- the parser raises nothing but ConstraintError ---------------------------------------------

TOKENS = [
    "x", "y", "int", "decimal", "float", "point", "box", "date", "timestamp", "string",
    "NOT", "AND", "OR", "(", ")", "=", "!=", "<>", "<", "<=", ">", ">=", "BETWEEN", "IN",
    "[", "]", ",", "*", "1", "-1", "1.5", "1e3", "1e999", "'a'", "''", "'it''s'", '"q"',
    "DATE '2026-01-01'", "TIMESTAMP '2026-01-01T00:00:00Z'", "POINT(1, 2)", "BOX(0, 0, 1, 1)",
    "WITHIN", "OVERLAPS", "CONTAINS", "9223372036854775808", "'", '"', "-", ".", "5.", "\x00",
]  # fmt: skip


def accepts_or_explains(source):
    try:
        constraint = parse(source)
    except ConstraintError as error:
        assert error.message
        assert isinstance(error.code, str)
        assert (error.position is None) != (error.path is None)
        return
    check_round_trip(constraint)


@SETTINGS
@given(source=st.text(max_size=200))
def test_arbitrary_text_gives_a_constraint_or_a_constraint_error(source):
    accepts_or_explains(source)


@SETTINGS
@given(tokens=st.lists(st.sampled_from(TOKENS), max_size=25))
def test_token_soup_gives_a_constraint_or_a_constraint_error(tokens):
    accepts_or_explains(" ".join(tokens))


KEYS = [
    "any_of", "all_of", "not", "x", "int x", "point p", "box b", "date d", '"q"', "eq", "ne",
    "lt", "le", "gt", "ge", "between", "in", "lo", "hi", "bounds", "any", "within",
    "overlaps", "contains", "type", "date", "timestamp", "point", "box",
]  # fmt: skip
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.decimals(),
    st.text(max_size=5),
    st.sampled_from(["*", "[)", "int", "2026-01-01", "1.00", "1e3", "2026-01-01T00:00:00Z"]),
)
json_values = st.recursive(
    json_scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=4)), kids, max_size=4),
    ),
    max_leaves=20,
)


@SETTINGS
@given(source=json_values)
def test_arbitrary_json_gives_a_constraint_or_a_constraint_error(source):
    accepts_or_explains(source)


# -- the fast path for `name op number` is the general parser's twin ----------------------------


@SETTINGS
@given(
    name=st.sampled_from(["x", "lot", "_a", "AND", "int", "Box", "date"]),
    op=st.sampled_from(["=", "!=", "<>", "<", "<=", ">", ">="]),
    number=st.one_of(
        st.integers(-(2**64), 2**64).map(str),
        st.decimals(allow_nan=False, allow_infinity=False).map(lambda d: format(d, "f")),
        st.floats(allow_nan=False).map(repr),
        st.sampled_from(["1e400", "-0", "5.", ".5", "1e", "9223372036854775807"]),
    ),
    space=st.sampled_from(["", " ", "  \t"]),
)
def test_a_single_comparison_parses_as_it_does_inside_parentheses(name, op, number, space):
    # given the same comparison alone (the fast path) and in parentheses (the parser)
    text = f"{space}{name}{space}{op}{space}{number}{space}"

    def outcome(source, shift):
        try:
            return parse(source)
        except ConstraintError as error:
            return error.code, error.position - shift, error.message

    # then both give the same constraint, or the same error at the same place
    assert outcome(text, 0) == outcome(f"({text})", 1)
