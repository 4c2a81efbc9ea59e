"""The match statement of the ``range`` strategy (see ``ranges`` for the design).

One statement per scope and set of kinds present: (a) the hits of every type, each
pair of kinds a branch that is one index lookup per row of the batch, counted per
disjunct pair and checked against what the two disjuncts' shapes need; (b) the
pairs that match without any hit, decided between shapes; (c) whole disjuncts
against equal whole disjuncts, one index probe each. Where no field can be covered
(no wildcard anywhere, no loose box predicate on both sides: the kinds say so) (b) is
left out and (a) compares the hits with the disjunct's count, reading no shape.
``match_sql`` caches the text, which depends only on the namespace, the kinds present
and the scope, and guards it with a check that the kinds are still those.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from matching.model import Type

from .encode import TYPES, WILDCARD_OP
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
# Wildcards have no rows, but they are counted as a kind of their type and side.
WILDCARD = WILDCARD_OP
# Box operators of which any two meet: a field loose on both sides is covered.
LOOSE_OPS = ("overlaps", "contains")

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
            # The ``<>`` repeated next to the ranges tells the planner (which guesses a
            # third of the rows for a range on a joined column) how few rows are left
            # when most of them have the driver's own shape.
            other = f"{x}.shape <> {d}.shape"
            if scope == "all":
                parts.append((f"{equal} AND {other}", f"{d}.whole"))
            else:
                parts.append((f"{equal} AND {x}.shape < {d}.shape AND {other}", f"{d}.whole"))
                parts.append((f"{equal} AND {x}.shape > {d}.shape AND {other}", f"{d}.whole"))
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
        f' FROM "{namespace}".used_operators'
    )


def _parse_kinds(kinds: str) -> list[tuple[str, str, str]]:
    return [tuple(item.split(" ")) for item in kinds.split(",") if item]  # type: ignore[misc]  # each item is three words (kinds_sql)


def combinations_of(kinds: str) -> Combinations:
    """Per type with rows on both sides, the (pub kind, sub kind) pairs that can hit.

    Wildcards are recorded as a kind too (``*``), but never join: they are left out.
    """
    ops: dict[tuple[str, str], list[str]] = {}
    for type_name, side, op in _parse_kinds(kinds):
        if op != WILDCARD:
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


def may_cover(kinds: str) -> bool:
    """Whether some field of some pair may be *covered* rather than hit.

    Only a wildcard (on either side) or a loose box predicate on both sides covers a
    field. Without either, a pair matches exactly when every predicate of the
    publication disjunct hits, and no pair matches without a hit at all.
    """
    items = _parse_kinds(kinds)
    if any(op == WILDCARD for _, _, op in items):
        return True
    loose = {side for type_name, side, op in items if type_name == "box" and op in LOOSE_OPS}
    return loose == {"pub", "sub"}


def _guard(namespace: str, kinds: str, serial: bool) -> str:
    """A condition that holds iff the kinds present are exactly ``kinds``."""
    items = _parse_kinds(kinds)
    listed = ", ".join(f"('{t}', '{side}', '{op}')" for t, side, op in items)
    known = f"(type, side, op) IN ({listed})" if items else "false"
    # serial() does nothing but is marked PARALLEL UNSAFE, which keeps the planner
    # from starting parallel workers for the whole statement.
    unsafe = f' AND "{namespace}".serial()' if serial else ""
    return (
        f"SELECT count(*) = {len(items)} AND coalesce(bool_and({known}), true){unsafe} AS same"
        f' FROM "{namespace}".used_operators'
    )


@lru_cache(maxsize=1024)
def match_sql(namespace: str, kinds: str, scope: Scope, serial: bool = False) -> str:
    """The statement for the kinds ``kinds`` (as ``kinds_sql`` writes them), checked.

    The statement also reads the kinds present, in its own snapshot: if they are not
    ``kinds`` it returns one row of NULLs instead of the matches, and the caller
    reads the kinds again and runs the statement made for them. So one statement, and
    one round trip, is a whole match while the kinds stay the same. A ``serial``
    statement never runs parallel workers: for a small batch, starting them costs
    more (milliseconds) than they save, and the planner, which may think a probe
    returns far more rows than it does, cannot tell.
    """
    return (
        f"WITH guard AS ({_guard(namespace, kinds, serial)})\n"
        f"SELECT m.* FROM (\n{_unguarded_sql(namespace, kinds, scope)}\n) m\n"
        "WHERE (SELECT same FROM guard)\n"
        "UNION ALL\n"
        "SELECT NULL::int8, NULL::int4, NULL::int8, NULL::int4 FROM guard WHERE NOT same"
    )


def _unguarded_sql(namespace: str, kinds: str, scope: Scope) -> str:
    ns = f'"{namespace}"'
    combinations = combinations_of(kinds)
    covers = may_cover(kinds)
    sources = []
    if covers:
        # (b): disjunct pairs that match with no hit, decided between shapes.
        shape_where = {
            "all": "",
            "publications": "\nWHERE pm.id = ANY(%(ids)s::int8[])",
            "subscriptions": "\nWHERE sm.id = ANY(%(ids)s::int8[])",
        }[scope]
        sources.append(
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
        sources.append(
            "SELECT pm.id, pm.disjunct_id, sm.id, sm.disjunct_id\n"
            f"FROM {ns}.pub_master pm\n"
            f"JOIN {ns}.sub_master sm ON sm.shape = pm.shape AND sm.vkey = pm.vkey\n"
            f"WHERE {probe_where}"
        )
    branches = [
        branch for t, pairs in combinations for branch in _branches(namespace, t, pairs, scope)
    ]
    if not branches:
        return "\nUNION ALL\n".join(sources) or _NOTHING
    hits = "\n  UNION ALL\n  ".join(branches)
    # (a): disjunct pairs with at least one hit.
    counted = (
        f"WITH hits AS (\n  {hits}\n),\n"
        "counted AS (\n"
        "  SELECT p_id, p_disjunct_id, max(p_shape) AS p_shape,\n"
        "         s_id, s_disjunct_id, max(s_shape) AS s_shape, count(*) AS hits\n"
        "  FROM hits GROUP BY p_id, p_disjunct_id, s_id, s_disjunct_id\n)"
    )
    if not covers:
        # No field can be covered: a pair matches iff every predicate of dp hits (at
        # most one hit per field, so that many hits also means ds has all of dp's
        # fields), which the master row's count says. No shape is read.
        batch = " AND pm.id = ANY(%(ids)s::int8[])" if scope == "publications" else ""
        with_hits = (
            f"{counted}\n"
            "SELECT c.p_id, c.p_disjunct_id, c.s_id, c.s_disjunct_id\n"
            f"FROM counted c JOIN {ns}.pub_master pm"
            " ON pm.id = c.p_id AND pm.disjunct_id = c.p_disjunct_id\n"
            f"WHERE c.hits = pm.count{batch}"
        )
        return "\nUNION ALL\n".join([with_hits, *sources])
    # Kept when hits + covered = count(dp). What a pair needs depends only on the two
    # shapes, so it is worked out once per pair of shapes (few) rather than once per
    # candidate (possibly very many), and kept apart (MATERIALIZED) so that the
    # planner does not fold it back into the per-candidate join. The type rows carry
    # their disjunct's shape (one per disjunct, so max() just carries it along).
    return (
        f"{counted},\n"
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
        "UNION ALL\n" + "\nUNION ALL\n".join(sources)
    )


# A statement with the right columns and no rows: nothing can match.
_NOTHING = "SELECT NULL::int8, NULL::int4, NULL::int8, NULL::int4 WHERE false"
