"""The rule-based query generator of the ``paper`` strategy (seed 000, section 3.2.1).

The paper issues one ``INSERT INTO intermediate_answer SELECT ...`` per type and
pair of (publication operator, subscription operator), each counting the predicate
pairs that intersect. Instead of writing those queries by hand, the operators are
described by rules and the condition of each query is derived from them:

* an ordered operator is a lower and an upper bound, each a column (``val`` or
  ``val2``) with an open/closed flag, or absent; two intervals intersect when
  neither starts after the other ends, which gives at most two comparisons;
* a point or box operator pair maps to one relation of the SPEC 3.2 table (the
  boxes are equal, share a point, one lies inside the other, or always).

PostgreSQL's geometric operators compare with a tolerance (``EPSILON``, 1e-6), so
each geometric relation is written as the indexable operator followed by the same
test on the exact coordinates: the operator lets a GiST index narrow the search,
the coordinates decide.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from matching.model import Type

from .encode import WILDCARD_OP


@dataclass(frozen=True)
class Bound:
    column: str  # "val" or "val2"
    closed: bool


@dataclass(frozen=True)
class OrderedOperator:
    symbol: str
    lower: Bound | None
    upper: Bound | None


def _op(symbol: str, lower: Bound | None, upper: Bound | None) -> OrderedOperator:
    return OrderedOperator(symbol, lower, upper)


_V, _V2 = "val", "val2"

ORDERED_OPERATORS: dict[str, OrderedOperator] = {
    op.symbol: op
    for op in (
        _op("=", Bound(_V, True), Bound(_V, True)),
        _op("<", None, Bound(_V, False)),
        _op("<=", None, Bound(_V, True)),
        _op(">", Bound(_V, False), None),
        _op(">=", Bound(_V, True), None),
        _op("[]", Bound(_V, True), Bound(_V2, True)),
        _op("[)", Bound(_V, True), Bound(_V2, False)),
        _op("(]", Bound(_V, False), Bound(_V2, True)),
        _op("()", Bound(_V, False), Bound(_V2, False)),
        _op(WILDCARD_OP, None, None),
    )
}


def ordered_condition(pub: OrderedOperator, sub: OrderedOperator) -> str:
    """When an interval of ``pub`` (alias ``p``) meets one of ``sub`` (alias ``s``)."""
    tests: list[tuple[str, str, str]] = []
    # The publication's interval must not start after the subscription's ends ...
    if pub.lower is not None and sub.upper is not None:
        both = pub.lower.closed and sub.upper.closed
        tests.append((f"p.{pub.lower.column}", "<=" if both else "<", f"s.{sub.upper.column}"))
    # ... nor the subscription's after the publication's ends.
    if sub.lower is not None and pub.upper is not None:
        both = sub.lower.closed and pub.upper.closed
        tests.append((f"s.{sub.lower.column}", "<=" if both else "<", f"p.{pub.upper.column}"))
    if not tests:
        return "TRUE"
    if len(tests) == 2 and tests[0] == (tests[1][2], "<=", tests[1][0]) and tests[1][1] == "<=":
        return f"{tests[0][0]} = {tests[0][2]}"  # a <= b AND b <= a: say it as an equality
    return " AND ".join(" ".join(t) for t in tests)


# -- points and boxes -------------------------------------------------------------------

EQUAL = "equal"  # the operands are the same box (or point)
SHARE = "share"  # the operands share a point
PUB_INSIDE = "pub_inside"  # the publication's operand lies inside the subscription's
SUB_INSIDE = "sub_inside"  # the subscription's operand lies inside the publication's
ALWAYS = "always"

_MIRROR = {PUB_INSIDE: SUB_INSIDE, SUB_INSIDE: PUB_INSIDE}

# SPEC 3.2, upper triangle (row = publication operator, column = subscription operator);
# the table is symmetric, the other half is derived by swapping the roles.
_BOX_TABLE: dict[tuple[str, str], str] = {
    ("=", "="): EQUAL,
    ("=", "overlaps"): SHARE,
    ("=", "contains"): SUB_INSIDE,  # A contains B
    ("=", "within"): PUB_INSIDE,  # A lies inside B
    ("overlaps", "overlaps"): ALWAYS,
    ("overlaps", "contains"): ALWAYS,
    ("overlaps", "within"): SHARE,
    ("contains", "contains"): ALWAYS,
    ("contains", "within"): PUB_INSIDE,
    ("within", "within"): SHARE,
}

# For points the operand of "=" is a point and that of "within" a box.
_POINT_TABLE: dict[tuple[str, str], str] = {
    ("=", "="): EQUAL,
    ("=", "within"): PUB_INSIDE,
    ("within", "within"): SHARE,
}


def _symmetric(table: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    full = dict(table)
    for (a, b), relation in table.items():
        full.setdefault((b, a), _MIRROR.get(relation, relation))
    return full


BOX_RELATIONS = _symmetric(_BOX_TABLE)
POINT_RELATIONS = _symmetric(_POINT_TABLE)


def _box_corners(b: str) -> tuple[str, str, str, str]:
    # A PostgreSQL box is stored upper-right corner first: b[0] is (x2, y2), b[1] is (x1, y1).
    return f"({b}[1])[0]", f"({b}[1])[1]", f"({b}[0])[0]", f"({b}[0])[1]"


def _exact_inside(inner: str, outer: str, inner_is_point: bool) -> str:
    ox1, oy1, ox2, oy2 = _box_corners(outer)
    if inner_is_point:
        ix1 = ix2 = f"{inner}[0]"
        iy1 = iy2 = f"{inner}[1]"
    else:
        ix1, iy1, ix2, iy2 = _box_corners(inner)
    return f"{ox1} <= {ix1} AND {ix2} <= {ox2} AND {oy1} <= {iy1} AND {iy2} <= {oy2}"


def box_relation(relation: str, a: str, b: str) -> str:
    """``relation`` between box expressions ``a`` (publication) and ``b`` (subscription).

    The indexable operator first, then the exact test on the corners.
    """
    if relation == ALWAYS:
        return "TRUE"
    if relation == EQUAL:
        corners = zip(_box_corners(a), _box_corners(b), strict=True)
        return f"{a} ~= {b} AND " + " AND ".join(f"{x} = {y}" for x, y in corners)
    if relation == PUB_INSIDE:
        return f"{a} <@ {b} AND " + _exact_inside(a, b, False)
    if relation == SUB_INSIDE:
        return f"{b} <@ {a} AND " + _exact_inside(b, a, False)
    ax1, ay1, ax2, ay2 = _box_corners(a)
    bx1, by1, bx2, by2 = _box_corners(b)
    return f"{a} && {b} AND {ax1} <= {bx2} AND {bx1} <= {ax2} AND {ay1} <= {by2} AND {by1} <= {ay2}"


def geometric_condition(t: Type, pub_op: str, sub_op: str) -> str:
    """The condition for a point or box operator pair, on ``p``/``s`` operand columns."""
    point = t is Type.POINT
    relations = POINT_RELATIONS if point else BOX_RELATIONS
    relation = relations[(pub_op, sub_op)]
    a, b = f"p.{operand_column(t, pub_op)}", f"s.{operand_column(t, sub_op)}"
    if not point or relation == SHARE:  # WITHIN/WITHIN on points compares two boxes
        return box_relation(relation, a, b)
    if relation == EQUAL:
        return f"{a} ~= {b} AND {a}[0] = {b}[0] AND {a}[1] = {b}[1]"
    if relation == PUB_INSIDE:
        return f"{a} <@ {b} AND " + _exact_inside(a, b, True)
    return f"{b} <@ {a} AND " + _exact_inside(b, a, True)


def operand_column(t: Type, op: str) -> str:
    """Where a predicate's operand is stored: points keep a ``within`` box in ``val_box``."""
    return "val_box" if t is Type.POINT and op == "within" else "val"


def condition(t: Type, pub_op: str, sub_op: str) -> str:
    """The generated intersection test for one (type, publication op, subscription op)."""
    if pub_op == WILDCARD_OP or sub_op == WILDCARD_OP:
        return "TRUE"  # a wildcard row meets every row of its field
    if t.ordered:
        return ordered_condition(ORDERED_OPERATORS[pub_op], ORDERED_OPERATORS[sub_op])
    return geometric_condition(t, pub_op, sub_op)


@lru_cache(maxsize=1024)
def intermediate_query(namespace: str, t: Type, pub_op: str, sub_op: str, scope: str) -> str:
    """One query of the sequence: count the intersecting predicate pairs of one combination.

    ``scope`` restricts the publications (``publications``) or the subscriptions
    (``subscriptions``) to the ids of the ``%(ids)s`` parameter, or nothing (``all``).
    The paper's GROUP BY is kept; since a disjunct names a field at most once it
    never merges rows, so ``count`` is always 1.
    """
    ns = f'"{namespace}"'
    name = TABLE_NAMES[t]
    restrict = {
        "all": "",
        "publications": "\n  AND p.p_id = ANY(%(ids)s::int8[])",
        "subscriptions": "\n  AND s.s_id = ANY(%(ids)s::int8[])",
    }[scope]
    return (
        f"INSERT INTO {ns}.intermediate_answer\n"
        "SELECT p.p_id, p.p_disjunct_id, s.s_id, s.s_disjunct_id, p.field, count(p.field)\n"
        f"FROM {ns}.{name}_pubs p JOIN {ns}.{name}_subs s ON p.field = s.field\n"
        f"WHERE p.op = '{pub_op}' AND s.op = '{sub_op}'\n"
        f"  AND {condition(t, pub_op, sub_op)}{restrict}\n"
        "GROUP BY p.p_id, p.p_disjunct_id, s.s_id, s.s_disjunct_id, p.field"
    )


# The paper names its tables integer_pubs, float_pubs, ...; here they follow SPEC 2.1.
TABLE_NAMES: dict[Type, str] = {t: t.value for t in Type}
