"""The match statement of the ``range`` strategy (see ``ranges`` for the design).

One statement per scope and set of kinds present: (a) the hits of every type, each
pair of kinds a branch that is one index lookup per row of the batch, counted per
disjunct pair and checked against what the two disjuncts' shapes need; (b) the
pairs that match without any hit, decided between shapes. ``match_sql`` caches the
text, which depends only on the namespace, the kinds present and the scope.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from matching.model import Type

from .rules import BOX_RELATIONS, SHARE, TABLE_NAMES, box_relation

Scope = Literal["all", "publications", "subscriptions"]
Combinations = tuple[tuple[Type, tuple[tuple[str, str], ...]], ...]

# Kinds of rows, as used_operators records them: a single value, an interval, a point
# predicate (all meet by overlap); box rows record their own operator.
POINT_VALUE = "="
INTERVAL = "&&"

# The smallest value of each ordered type, standing in for a missing lower bound.
_MINIMUM: dict[Type, str] = {
    Type.INT: "'-9223372036854775808'::int8",
    Type.DECIMAL: "'-Infinity'::numeric",
    Type.FLOAT: "'-Infinity'::float8",
    Type.DATE: "'-infinity'::date",
    Type.TIMESTAMP: "'-infinity'::timestamptz",
    Type.STRING: "''::text",
}


def _ordered_branch(t: Type, kinds: tuple[str, str], d: str, x: str) -> list[tuple[str, str]]:
    """(join condition, filter on the driving side) for one pair of kinds.

    ``d`` is the alias of the side whose rows drive the join (the batch), ``x`` the
    side searched through its indexes; ``kinds`` is (driver kind, searched kind).
    """
    collate = ' COLLATE "C"' if t is Type.STRING else ""
    if kinds == (POINT_VALUE, POINT_VALUE):
        return [(f"{x}.field = {d}.field AND {x}.pt = {d}.pt", f"{d}.pt IS NOT NULL")]
    if kinds == (POINT_VALUE, INTERVAL):
        join = f"{x}.pt IS NULL AND {x}.val @> {d}.pt AND {x}.field = {d}.field"
        return [(join, f"{d}.pt IS NOT NULL")]
    if kinds == (INTERVAL, POINT_VALUE):
        # A B-tree range scan over the single values between the interval's bounds,
        # then the exact test (bounds may be open); an unbounded top needs no test.
        low = f"{x}.pt >= (coalesce(lower({d}.val), {_MINIMUM[t]}){collate})"
        exact = f"{d}.val @> {x}.pt"
        return [
            (
                f"{x}.field = {d}.field AND {low} AND {x}.pt <= (upper({d}.val){collate})"
                f" AND {exact}",
                f"{d}.pt IS NULL AND NOT upper_inf({d}.val)",
            ),
            (
                f"{x}.field = {d}.field AND {low} AND {exact}",
                f"{d}.pt IS NULL AND upper_inf({d}.val)",
            ),
        ]
    join = f"{x}.pt IS NULL AND {x}.val && {d}.val AND {x}.field = {d}.field"
    return [(join, f"{d}.pt IS NULL")]


def _branches(
    namespace: str, t: Type, pairs: tuple[tuple[str, str], ...], scope: Scope
) -> list[str]:
    ns = f'"{namespace}"'
    name = TABLE_NAMES[t]
    head = (
        "SELECT p.id AS p_id, p.disjunct_id AS p_disjunct_id, p.shape AS p_shape,"
        " s.id AS s_id, s.disjunct_id AS s_disjunct_id, s.shape AS s_shape\n"
        f"  FROM {ns}.{name}_pubs p JOIN {ns}.{name}_subs s ON "
    )
    driver, searched = ("s", "p") if scope == "subscriptions" else ("p", "s")
    restrict = [] if scope == "all" else [f"{driver}.id = ANY(%(ids)s::int8[])"]
    parts: list[tuple[str, list[str]]] = []
    if t.ordered:
        for pub_kind, sub_kind in pairs:
            kinds = (sub_kind, pub_kind) if driver == "s" else (pub_kind, sub_kind)
            for join, where in _ordered_branch(t, kinds, driver, searched):
                parts.append((join, [where]))
    elif t is Type.POINT:
        parts.append((f"s.field = p.field AND {box_relation(SHARE, 'p.val', 's.val')}", []))
    else:
        by_relation: dict[str, list[tuple[str, str]]] = {}
        for pair in pairs:
            by_relation.setdefault(BOX_RELATIONS[pair], []).append(pair)
        for relation, served in sorted(by_relation.items()):
            if relation == "always":
                continue  # loose/loose pairs are covered by the shapes, not joined
            listed = ", ".join(f"('{a}', '{b}')" for a, b in served)
            join = f"s.field = p.field AND {box_relation(relation, 'p.val', 's.val')}"
            parts.append((join, [f"(p.op, s.op) IN ({listed})"]))
    branches = []
    for join, filters in parts:
        where = " AND ".join(restrict + filters)
        branches.append(f"{head}{join}" + (f"\n  WHERE {where}" if where else ""))
    return branches


@lru_cache(maxsize=1024)
def match_sql(namespace: str, combinations: Combinations, scope: Scope) -> str:
    ns = f'"{namespace}"'
    shape_where = {
        "all": "",
        "publications": "\nWHERE pm.id = ANY(%(ids)s::int8[])",
        "subscriptions": "\nWHERE sm.id = ANY(%(ids)s::int8[])",
    }[scope]
    # (b): disjunct pairs that match with no hit, decided between shapes.
    covered_only = (
        "SELECT pm.id, pm.disjunct_id, sm.id, sm.disjunct_id\n"
        f"FROM {ns}.pub_master pm\n"
        f"JOIN {ns}.pub_shapes ps ON ps.id = pm.shape\n"
        f"JOIN {ns}.sub_shapes ss ON ss.wild @> ps.tight AND ss.fields @> ps.wild"
        " AND (ss.wild || ss.loose) @> ps.loose\n"
        f"JOIN {ns}.sub_master sm ON sm.shape = ss.id"
        f"{shape_where}"
    )
    branches = [
        branch for t, pairs in combinations for branch in _branches(namespace, t, pairs, scope)
    ]
    if not branches:
        return covered_only
    hits = "\n  UNION ALL\n  ".join(branches)
    # (a): disjunct pairs with at least one hit, kept when hits + covered = count(dp).
    # What a pair needs depends only on the two shapes, so it is worked out once per
    # pair of shapes (few) rather than once per candidate (possibly very many), and
    # kept apart (MATERIALIZED) so that the planner does not fold it back into the
    # per-candidate join. The type rows carry their disjunct's shape (one per
    # disjunct, so max() just carries it along), and no master row is read at all.
    return (
        f"WITH hits AS (\n  {hits}\n),\n"
        "counted AS (\n"
        "  SELECT p_id, p_disjunct_id, max(p_shape) AS p_shape,\n"
        "         s_id, s_disjunct_id, max(s_shape) AS s_shape, count(*) AS hits\n"
        "  FROM hits GROUP BY p_id, p_disjunct_id, s_id, s_disjunct_id\n),\n"
        "needs AS MATERIALIZED (\n"
        "  SELECT ps.id AS p_shape, ss.id AS s_shape, cardinality(ps.fields)\n"
        "    - cardinality(ps.wild) - (SELECT count(*) FROM unnest(ps.fields) f\n"
        "       WHERE NOT f = ANY(ps.wild)\n"
        "         AND (f = ANY(ss.wild) OR (f = ANY(ps.loose) AND f = ANY(ss.loose)))) AS hits\n"
        "  FROM (SELECT DISTINCT p_shape, s_shape FROM counted) k\n"
        f"  JOIN {ns}.pub_shapes ps ON ps.id = k.p_shape\n"
        f"  JOIN {ns}.sub_shapes ss ON ss.id = k.s_shape\n"
        "  WHERE ss.fields @> ps.fields\n"
        ")\n"
        "SELECT c.p_id, c.p_disjunct_id, c.s_id, c.s_disjunct_id\n"
        "FROM counted c JOIN needs n ON n.p_shape = c.p_shape AND n.s_shape = c.s_shape\n"
        "WHERE c.hits = n.hits\n"
        "UNION ALL\n"
        f"{covered_only}"
    )
