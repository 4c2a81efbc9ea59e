"""The match statement of the ``range`` strategy (see ``ranges`` for the design).

One statement per scope and set of kinds present: (a) the hits of every type, each
pair of kinds a branch that is one index lookup per row of the batch, counted per
disjunct pair and checked against what the two disjuncts' shapes need; (b) the
pairs that match without any hit, decided between shapes; (c) whole disjuncts
against equal whole disjuncts, one index probe each. ``match_sql`` caches the text,
which depends only on the namespace, the kinds present and the scope;
``guarded_match_sql`` wraps it with a check that the kinds are still those.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from matching.model import Type

from .encode import TYPES
from .rules import BOX_RELATIONS, SHARE, TABLE_NAMES, box_relation

Scope = Literal["all", "publications", "subscriptions"]
Combinations = tuple[tuple[Type, tuple[tuple[str, str], ...]], ...]

# Kinds of rows, as used_operators records them: a single value, an interval, a point
# predicate (all meet by overlap); box rows record their own operator.
POINT_VALUE = "="
INTERVAL = "&&"
# A single value of a *whole* disjunct (see ``ranges``): one whose predicates are all
# single values of ordered types, at least two of them.
WHOLE_VALUE = "=="

# The smallest value of each ordered type, standing in for a missing lower bound.
_MINIMUM: dict[Type, str] = {
    Type.INT: "'-9223372036854775808'::int8",
    Type.DECIMAL: "'-Infinity'::numeric",
    Type.FLOAT: "'-Infinity'::float8",
    Type.DATE: "'-infinity'::date",
    Type.TIMESTAMP: "'-infinity'::timestamptz",
    Type.STRING: "''::text",
}


def _ordered_parts(
    t: Type, driving: set[str], searched: set[str], d: str, x: str, scope: Scope
) -> list[tuple[str, str]]:
    """(join condition, filter on the driving side) for the kinds present on each side.

    ``d`` is the alias of the side whose rows drive the join (the batch), ``x`` the
    side searched through its indexes; ``driving`` and ``searched`` are the kinds of
    rows each side has for this type.
    """
    collate = ' COLLATE "C"' if t is Type.STRING else ""
    singles = {POINT_VALUE, WHOLE_VALUE}
    parts: list[tuple[str, str]] = []
    if driving & singles and searched & singles:
        equal = f"{x}.field = {d}.field AND {x}.pt = {d}.pt"
        if WHOLE_VALUE in driving and WHOLE_VALUE in searched:
            # A row of a whole disjunct skips the rows of its own shape on the other
            # side: the whole-disjunct probe has answered those pairs. Shape ids are
            # shared by both sides, so the other side's rows of that shape carry the
            # same id. Skipping it as two ranges of the index's last column keeps the
            # probe a B-tree range scan (``<>`` would read the shape's rows and drop
            # them).
            if POINT_VALUE in driving:
                parts.append((equal, f"{d}.pt IS NOT NULL AND NOT {d}.whole"))
            if scope == "all":
                parts.append((f"{equal} AND {x}.shape <> {d}.shape", f"{d}.whole"))
            else:
                parts.append((f"{equal} AND {x}.shape < {d}.shape", f"{d}.whole"))
                parts.append((f"{equal} AND {x}.shape > {d}.shape", f"{d}.whole"))
        else:
            parts.append((equal, f"{d}.pt IS NOT NULL"))
    if driving & singles and INTERVAL in searched:
        join = f"{x}.pt IS NULL AND {x}.val @> {d}.pt AND {x}.field = {d}.field"
        parts.append((join, f"{d}.pt IS NOT NULL"))
    if INTERVAL in driving and searched & singles:
        # A B-tree range scan over the single values between the interval's bounds,
        # then the exact test (bounds may be open); an unbounded top needs no test.
        low = f"{x}.pt >= (coalesce(lower({d}.val), {_MINIMUM[t]}){collate})"
        exact = f"{d}.val @> {x}.pt"
        parts.append(
            (
                f"{x}.field = {d}.field AND {low} AND {x}.pt <= (upper({d}.val){collate})"
                f" AND {exact}",
                f"{d}.pt IS NULL AND NOT upper_inf({d}.val)",
            )
        )
        parts.append(
            (
                f"{x}.field = {d}.field AND {low} AND {exact}",
                f"{d}.pt IS NULL AND upper_inf({d}.val)",
            )
        )
    if INTERVAL in driving and INTERVAL in searched:
        join = f"{x}.pt IS NULL AND {x}.val && {d}.val AND {x}.field = {d}.field"
        parts.append((join, f"{d}.pt IS NULL"))
    return parts


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
        pub_kinds = {a for a, _ in pairs}
        sub_kinds = {b for _, b in pairs}
        kinds = (sub_kinds, pub_kinds) if driver == "s" else (pub_kinds, sub_kinds)
        for join, where in _ordered_parts(t, *kinds, driver, searched, scope):
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


def kinds_sql(namespace: str) -> str:
    """The kinds present, as one text: ``type side kind`` items joined by commas, sorted."""
    return (
        "SELECT coalesce(string_agg(type || ' ' || side || ' ' || op, ','"
        ' ORDER BY type COLLATE "C", side COLLATE "C", op COLLATE "C"), \'\')'
        f' FROM "{namespace}".used_operators WHERE n > 0'
    )


def combinations_of(kinds: str) -> Combinations:
    """Per type with rows on both sides, the (pub kind, sub kind) pairs present."""
    ops: dict[tuple[str, str], list[str]] = {}
    for item in filter(None, kinds.split(",")):
        type_name, side, op = item.split(" ")
        ops.setdefault((type_name, side), []).append(op)
    result = []
    for t in TYPES:
        pairs = tuple(
            (a, b)
            for a in sorted(ops.get((t.value, "pub"), []))
            for b in sorted(ops.get((t.value, "sub"), []))
        )
        if pairs:
            result.append((t, pairs))
    return tuple(result)


@lru_cache(maxsize=1024)
def guarded_match_sql(namespace: str, kinds: str, scope: Scope) -> str:
    """``match_sql`` for the kinds ``kinds`` (as ``kinds_sql`` writes them), checked.

    The statement also reads the kinds present, in its own snapshot: if they are not
    ``kinds`` it returns one row of NULLs instead of the matches, and the caller
    reads the kinds again and runs the statement made for them. So one statement, and
    one round trip, is a whole match while the kinds stay the same.
    """
    literal = "'" + kinds.replace("'", "''") + "'"
    return (
        f"WITH guard AS (SELECT ({kinds_sql(namespace)}) = {literal} AS same)\n"
        f"SELECT m.* FROM (\n{match_sql(namespace, combinations_of(kinds), scope)}\n) m\n"
        "WHERE (SELECT same FROM guard)\n"
        "UNION ALL\n"
        "SELECT NULL::int8, NULL::int4, NULL::int8, NULL::int4 FROM guard WHERE NOT same"
    )


@lru_cache(maxsize=1024)
def match_sql(namespace: str, combinations: Combinations, scope: Scope) -> str:
    ns = f'"{namespace}"'
    shape_where = {
        "all": "",
        "publications": "\nWHERE pm.id = ANY(%(ids)s::int8[])",
        "subscriptions": "\nWHERE sm.id = ANY(%(ids)s::int8[])",
    }[scope]
    # (b): disjunct pairs that match with no hit, decided between shapes.
    without_hits = (
        "SELECT pm.id, pm.disjunct_id, sm.id, sm.disjunct_id\n"
        f"FROM {ns}.pub_master pm\n"
        f"JOIN {ns}.pub_shapes ps ON ps.id = pm.shape\n"
        f"JOIN {ns}.sub_shapes ss ON ss.wild @> ps.tight AND ss.fields @> ps.wild"
        " AND (ss.wild || ss.loose) @> ps.loose\n"
        f"JOIN {ns}.sub_master sm ON sm.shape = ss.id"
        f"{shape_where}"
    )
    if any((WHOLE_VALUE, WHOLE_VALUE) in pairs for _, pairs in combinations):
        # (c): whole disjuncts against the other side's whole disjuncts of the same
        # shape (the same fields, all single values) with the same values: one probe
        # of the (shape, vkey) index per whole disjunct of the batch. The hits of (a)
        # leave these pairs out (``_ordered_parts``), and (b) never has them (a whole
        # disjunct has no wildcard), so the three sources stay disjoint.
        probe_where = {
            "all": "pm.vkey IS NOT NULL",
            "publications": "pm.id = ANY(%(ids)s::int8[]) AND pm.vkey IS NOT NULL",
            "subscriptions": "sm.id = ANY(%(ids)s::int8[]) AND sm.vkey IS NOT NULL",
        }[scope]
        without_hits += (
            "\nUNION ALL\n"
            "SELECT pm.id, pm.disjunct_id, sm.id, sm.disjunct_id\n"
            f"FROM {ns}.pub_master pm\n"
            f"JOIN {ns}.sub_master sm ON sm.shape = pm.shape AND sm.vkey = pm.vkey\n"
            f"WHERE {probe_where}"
        )
    branches = [
        branch for t, pairs in combinations for branch in _branches(namespace, t, pairs, scope)
    ]
    if not branches:
        return without_hits
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
        f"{without_hits}"
    )
