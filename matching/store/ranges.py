"""The ``range`` strategy: predicates as range and cube values, one GiST join per type.

Storage. A predicate on an ordered type is one PostgreSQL range value (int8range,
numrange, ``floatrange``, daterange, tstzrange, ``textrange`` with the "C"
collation; the last two are range types created in the store's schema), kept in
``<type>_pubs(id, disjunct_id, field, val)`` with a GiST index on ``(field, val)``
(btree_gist supplies the ``field`` part). Whether two predicates intersect is then
``&&``, decided by the index.

Points and boxes are ``cube`` values (2-D), because PostgreSQL's own point and box
operators compare with a tolerance of 1e-6 while ``cube`` compares exactly:

* a point predicate ``= p`` is the degenerate cube at p, ``WITHIN B`` the cube B;
  two point predicates intersect iff their cubes overlap (``&&``, edges included);
* a box predicate keeps its operator and its operand box as a cube. Per SPEC 3.2
  every operator pair is one relation between the two operands: they overlap
  (``&&``), one contains the other (``@>``/``<@``), they are equal (``=``), or
  "always" for two of OVERLAPS/CONTAINS. The box query therefore has one
  index-driven branch per relation. (Encoding each operator as a region of 4-D
  box space needs half-infinite regions, on which a GiST index cannot prune.)

Wildcards and the "always" box pairs never become rows that join with everything.
They are described per disjunct by its *shape*: the type-qualified field keys
(``int:lot``) of all its predicates (``fields``), of its wildcards (``wild``), of
its OVERLAPS/CONTAINS box predicates (``loose``) and of the rest (``tight``).
Shapes are shared: each master row points to one ``<side>_shapes`` row, and there
are as many shapes as there are different ways of writing a constraint, not as
many as constraints.

Publication disjunct dp matches subscription disjunct ds iff every field of dp is
in ``fields(ds)`` and each field f of dp is *covered* (f is a wildcard in dp or in
ds, or loose in both) or *hit* (the two predicates on f intersect). Matches come
from two disjoint sources:

(a) pairs with at least one hit, found by the per-type GiST joins, are counted and
    kept when hits + covered fields = the predicate count of dp;
(b) pairs with no hit at all: every tight field of dp is a wildcard of ds, every
    loose field of dp is a wildcard or loose in ds, and ds has every wildcard field
    of dp. This is decided between shapes alone (a scan of the small shape table)
    and then expanded to the disjuncts of the qualifying shapes through an index,
    so every row it reads is a match.

So a wildcard subscription that cannot match a publication is never read while
matching it: it has no rows in the type tables, and its shape fails (b).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Iterable
from functools import cache
from typing import Any, Literal

import psycopg

from matching.model import (
    BoxContains,
    BoxEq,
    BoxOverlaps,
    BoxWithin,
    Disjunct,
    Interval,
    PointEq,
    PointWithin,
    Type,
    Wildcard,
)

from .base import DisjunctPair, Item, check_ids
from .database import SIDES, DatabaseStore, Index, Side, chunked
from .encode import (
    GEOMETRIC_OPS,
    TYPES,
    check_storable,
    cube_box_text,
    cube_point_text,
    field_key,
    range_text,
)
from .rules import BOX_RELATIONS, EQUAL, PUB_INSIDE, SHARE, SUB_INSIDE, TABLE_NAMES
from .sql import bump_counters, copy_rows

Scope = Literal["all", "publications", "subscriptions"]
Combinations = tuple[tuple[Type, tuple[tuple[str, str], ...]], ...]

# The operator recorded in used_operators for range and point rows, which meet by overlap.
OVERLAP = "&&"

RANGE_TYPES: dict[Type, str] = {
    Type.INT: "int8range",
    Type.DECIMAL: "numrange",
    Type.FLOAT: "floatrange",  # created in the store's schema
    Type.DATE: "daterange",
    Type.TIMESTAMP: "tstzrange",
    Type.STRING: "textrange",  # created in the store's schema
}

_LOOSE = (BoxOverlaps, BoxContains)

# The box branches: the operator relating the operands, and the operator pairs it serves.
_BOX_BRANCHES: dict[str, str] = {
    SHARE: "s.val OPERATOR({cube}.&&) p.val",
    PUB_INSIDE: "s.val OPERATOR({cube}.@>) p.val",
    SUB_INSIDE: "s.val OPERATOR({cube}.<@) p.val",
    EQUAL: "s.val OPERATOR({cube}.=) p.val",
}


# The role of a field in a disjunct, as the shape records it.
_TIGHT, _WILD, _LOOSE_ROLE = 0, 1, 2


class Shape:
    """The field keys of one disjunct by role; ``key`` identifies the shape."""

    __slots__ = ("fields", "wild", "loose", "tight", "key")

    def __init__(self, signature: tuple[tuple[str, int], ...]) -> None:
        self.fields = sorted(key for key, _ in signature)
        self.wild = sorted(key for key, role in signature if role == _WILD)
        self.loose = sorted(key for key, role in signature if role == _LOOSE_ROLE)
        self.tight = sorted(key for key, role in signature if role == _TIGHT)
        digest = hashlib.blake2b(
            json.dumps([self.fields, self.wild, self.loose]).encode(), digest_size=16
        ).digest()
        self.key = uuid.UUID(bytes=digest)


def _role(pred: Any) -> int:
    kind = type(pred)
    if kind is Wildcard:
        return _WILD
    return _LOOSE_ROLE if kind in _LOOSE else _TIGHT


def _value(t: Type, pred: Any) -> str:
    """A non-wildcard predicate as the text of its ``val`` column."""
    kind = type(pred)
    if kind is Interval:
        return range_text(t, pred)
    if kind is PointEq:
        return cube_point_text(pred.point)
    if kind is PointWithin:
        return cube_box_text(pred.box)
    assert kind in (BoxEq, BoxOverlaps, BoxContains, BoxWithin)
    return cube_box_text(pred.box)


class RangeStore(DatabaseStore):
    strategy = "range"
    extensions = ("btree_gist", "cube")

    def table(self, t: Type, side: Side) -> str:
        return self.q(f"{TABLE_NAMES[t]}_{side}s")

    def _cube(self, cur: psycopg.Cursor[Any]) -> str:
        schema = getattr(self, "_cube_schema", None)
        if schema is None:
            schema = self._cube_schema = self.extension_schema(cur, "cube")
        return f'"{schema}"'

    def _val_type(self, t: Type, cube: str) -> str:
        if t in RANGE_TYPES:
            name = RANGE_TYPES[t]
            return self.q(name) if name in ("floatrange", "textrange") else name
        return f"{cube}.cube"

    def _ddl(self) -> list[str]:
        # Called inside create(), after the extensions exist.
        with self.cursor() as cur:
            cube = self._cube(cur)
        statements = [
            f"CREATE TYPE {self.q('floatrange')} AS RANGE (subtype = float8, subtype_diff = float8mi)",
            f'CREATE TYPE {self.q("textrange")} AS RANGE (subtype = text, collation = "C")',
            f"CREATE TABLE {self.q('used_operators')} (type text NOT NULL, side text NOT NULL,"
            " op text NOT NULL, n int8 NOT NULL, PRIMARY KEY (type, side, op))",
        ]
        for side in SIDES:
            statements.append(
                f"CREATE TABLE {self.master(side)} (id int8 NOT NULL, disjunct_id int4 NOT NULL,"
                " count int4 NOT NULL, shape uuid NOT NULL)"
            )
            statements.append(
                f"CREATE TABLE {self.q(f'{side}_shapes')} (key uuid PRIMARY KEY,"
                " fields text[] NOT NULL, wild text[] NOT NULL, loose text[] NOT NULL,"
                " tight text[] NOT NULL, n int8 NOT NULL)"
            )
            for t in TYPES:
                op = "op text NOT NULL, " if t is Type.BOX else ""
                statements.append(
                    f"CREATE TABLE {self.table(t, side)} (id int8 NOT NULL,"
                    f' disjunct_id int4 NOT NULL, shape uuid NOT NULL, field text COLLATE "C" NOT NULL,'
                    f" {op}val {self._val_type(t, cube)} NOT NULL)"
                )
        return statements

    def _indexes(self) -> list[Index]:
        indexes = []
        for side in SIDES:
            master = self.master(side)
            indexes.append(
                Index(side, f"{side}_master_id_idx", "(id, disjunct_id)", master, unique=True)
            )
            indexes.append(Index(side, f"{side}_master_shape_idx", "(shape)", master))
            for t in TYPES:
                name, table = f"{TABLE_NAMES[t]}_{side}s", self.table(t, side)
                indexes.append(
                    Index(side, f"{name}_field_val_idx", "USING gist (field, val)", table)
                )
                indexes.append(Index(side, f"{name}_id_idx", "(id)", table))
        return indexes

    # -- writing --------------------------------------------------------------------------

    def _write(self, cur: psycopg.Cursor[Any], side: Side, items: Iterable[Item]) -> int:
        used: Counter[tuple[str, str, str]] = Counter()
        shapes: dict[uuid.UUID, Shape] = {}
        shape_counts: Counter[uuid.UUID] = Counter()
        cache: dict[tuple[tuple[str, int], ...], Shape] = {}
        total = 0
        for chunk in chunked(items):
            check_ids(i for i, _ in chunk)
            masters: list[tuple[int, int, int, uuid.UUID]] = []
            rows: dict[Type, list[tuple[Any, ...]]] = {}
            for i, constraint in chunk:
                check_storable(constraint)
                for j, disjunct in enumerate(constraint.disjuncts):
                    shape = _shape_of(disjunct, cache)
                    shapes[shape.key] = shape
                    shape_counts[shape.key] += 1
                    masters.append((i, j, len(disjunct.items), shape.key))
                    for attribute, pred in disjunct.items:
                        if type(pred) is Wildcard:
                            continue
                        t = attribute.type
                        if t is Type.BOX:
                            op = GEOMETRIC_OPS[type(pred)]
                            row: tuple[Any, ...] = (
                                i,
                                j,
                                shape.key,
                                attribute.name,
                                op,
                                _value(t, pred),
                            )
                        else:
                            op = OVERLAP
                            row = (i, j, shape.key, attribute.name, _value(t, pred))
                        rows.setdefault(t, []).append(row)
                        used[(t.value, side, op)] += 1
            copy_rows(cur, self.master(side), ["id", "disjunct_id", "count", "shape"], masters)
            for t, type_rows in rows.items():
                columns = ["id", "disjunct_id", "shape", "field", "op", "val"]
                if t is not Type.BOX:
                    columns.remove("op")
                copy_rows(cur, self.table(t, side), columns, type_rows)
            total += len(chunk)
        self._add_shapes(cur, side, [(shapes[k], n) for k, n in shape_counts.items()])
        bump_counters(cur, self.q("used_operators"), ["type", "side", "op"], used)
        return total

    def _add_shapes(
        self, cur: psycopg.Cursor[Any], side: Side, counted: list[tuple[Shape, int]]
    ) -> None:
        if not counted:
            return
        table = self.q(f"{side}_shapes")
        counted.sort(key=lambda sn: sn[0].key)  # a fixed lock order between writers
        cur.executemany(
            f"INSERT INTO {table} AS t (key, fields, wild, loose, tight, n)"
            " VALUES (%s, %s::text[], %s::text[], %s::text[], %s::text[], %s)"
            " ON CONFLICT (key) DO UPDATE SET n = t.n + EXCLUDED.n",
            [(s.key, s.fields, s.wild, s.loose, s.tight, n) for s, n in counted],
        )

    def _delete(self, cur: psycopg.Cursor[Any], side: Side, ids: list[int]) -> None:
        cur.execute(
            f"SELECT DISTINCT type FROM {self.q('used_operators')} WHERE side = %s AND n > 0",
            [side],
        )
        removed: Counter[tuple[str, str, str]] = Counter()
        for (type_name,) in cur.fetchall():
            t = Type(type_name)
            op = "op" if t is Type.BOX else f"'{OVERLAP}'"
            cur.execute(
                f"WITH d AS (DELETE FROM {self.table(t, side)} WHERE id = ANY(%s::int8[])"
                f" RETURNING {op} AS op) SELECT op, count(*) FROM d GROUP BY op",
                [ids],
            )
            for op_name, n in cur.fetchall():
                removed[(t.value, side, op_name)] -= n
        shapes = self.q(f"{side}_shapes")
        cur.execute(
            f"WITH d AS (DELETE FROM {self.master(side)} WHERE id = ANY(%s::int8[])"
            " RETURNING shape), c AS (SELECT shape, count(*) AS n FROM d GROUP BY shape)"
            f" UPDATE {shapes} t SET n = t.n - c.n FROM c WHERE t.key = c.shape",
            [ids],
        )
        cur.execute(f"DELETE FROM {shapes} WHERE n <= 0")
        bump_counters(cur, self.q("used_operators"), ["type", "side", "op"], removed)

    # -- matching -------------------------------------------------------------------------

    def combinations(self, cur: psycopg.Cursor[Any]) -> Combinations:
        """Per type with rows on both sides, the (pub op, sub op) pairs present.

        Only these can produce hits; for boxes the pairs also decide which of the
        relation branches the query needs (the paper's optimisation of section 5).
        """
        cur.execute(f"SELECT type, side, op FROM {self.q('used_operators')} WHERE n > 0")
        ops: dict[tuple[str, str], list[str]] = {}
        for type_name, side, op in cur.fetchall():
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

    def match_sql(self, cur: psycopg.Cursor[Any], scope: Scope) -> str:
        """The one statement that matches a scope (ids in the ``%(ids)s`` parameter)."""
        return _match_sql(self.namespace, self._cube(cur), self.combinations(cur), scope)

    def _match(self, scope: Scope, ids: list[int]) -> set[DisjunctPair]:
        # Read-only, and one statement once the types are known: no transaction of its own.
        with self.cursor() as cur:
            cur.execute(self.match_sql(cur, scope), {"ids": ids})
            return set(cur.fetchall())


def _shape_of(disjunct: Disjunct, cache: dict[tuple[tuple[str, int], ...], Shape]) -> Shape:
    # Disjuncts differ in values far more often than in shape: look the shape up by
    # its signature instead of sorting and hashing for every disjunct.
    signature = tuple((field_key(a), _role(pred)) for a, pred in disjunct.items)
    shape = cache.get(signature)
    if shape is None:
        shape = Shape(signature)
        if len(cache) < 100_000:
            cache[signature] = shape
    return shape


def _hit_branches(
    namespace: str, cube: str, t: Type, pairs: tuple[tuple[str, str], ...], where: str
) -> list[str]:
    ns = f'"{namespace}"'
    name = TABLE_NAMES[t]
    head = (
        "SELECT p.id AS p_id, p.disjunct_id AS p_disjunct_id, p.shape AS p_shape,"
        " s.id AS s_id, s.disjunct_id AS s_disjunct_id, s.shape AS s_shape\n"
        f"  FROM {ns}.{name}_pubs p JOIN {ns}.{name}_subs s ON s.field = p.field AND "
    )
    if t.ordered:
        return [f"{head}s.val && p.val{where}"]
    if t is Type.POINT:
        return [f"{head}s.val OPERATOR({cube}.&&) p.val{where}"]
    branches = []
    for relation, test in _BOX_BRANCHES.items():
        served = [pair for pair in pairs if BOX_RELATIONS[pair] == relation]
        if not served:
            continue
        listed = ", ".join(f"('{a}', '{b}')" for a, b in served)
        condition = f"(p.op, s.op) IN ({listed})"
        clause = f"{where}\n    AND {condition}" if where else f"\n  WHERE {condition}"
        branches.append(f"{head}{test.format(cube=cube)}{clause}")
    return branches


@cache
def _match_sql(namespace: str, cube: str, combinations: Combinations, scope: Scope) -> str:
    ns = f'"{namespace}"'
    where = {
        "all": "",
        "publications": "\n  WHERE p.id = ANY(%(ids)s::int8[])",
        "subscriptions": "\n  WHERE s.id = ANY(%(ids)s::int8[])",
    }[scope]
    shape_where = {
        "all": "",
        "publications": "\nWHERE pm.id = ANY(%(ids)s::int8[])",
        "subscriptions": "\nWHERE sm.id = ANY(%(ids)s::int8[])",
    }[scope]
    # (b): disjunct pairs that match with no hit, decided between shapes.
    covered_only = (
        "SELECT pm.id, pm.disjunct_id, sm.id, sm.disjunct_id\n"
        f"FROM {ns}.pub_master pm\n"
        f"JOIN {ns}.pub_shapes ps ON ps.key = pm.shape\n"
        f"JOIN {ns}.sub_shapes ss ON ss.wild @> ps.tight AND ss.fields @> ps.wild"
        " AND (ss.wild || ss.loose) @> ps.loose\n"
        f"JOIN {ns}.sub_master sm ON sm.shape = ss.key"
        f"{shape_where}"
    )
    branches = [
        branch
        for t, pairs in combinations
        for branch in _hit_branches(namespace, cube, t, pairs, where)
    ]
    if not branches:
        return covered_only
    hits = "\n  UNION ALL\n  ".join(branches)
    # (a): disjunct pairs with at least one hit, kept when hits + covered = count(dp). The
    # type rows carry their disjunct's shape, so no master row is read for a candidate.
    return (
        f"WITH hits AS (\n  {hits}\n),\n"
        "counted AS (\n"
        "  SELECT p_id, p_disjunct_id, p_shape, s_id, s_disjunct_id, s_shape, count(*) AS hits\n"
        "  FROM hits GROUP BY p_id, p_disjunct_id, p_shape, s_id, s_disjunct_id, s_shape\n)\n"
        "SELECT c.p_id, c.p_disjunct_id, c.s_id, c.s_disjunct_id\n"
        "FROM counted c\n"
        f"JOIN {ns}.pub_shapes ps ON ps.key = c.p_shape\n"
        f"JOIN {ns}.sub_shapes ss ON ss.key = c.s_shape\n"
        "WHERE ss.fields @> ps.fields\n"
        "  AND c.hits + cardinality(ps.wild) + CASE\n"
        "    WHEN cardinality(ss.wild) = 0\n"
        "     AND (cardinality(ps.loose) = 0 OR cardinality(ss.loose) = 0) THEN 0\n"
        "    ELSE (SELECT count(*) FROM unnest(ps.fields) f\n"
        "          WHERE NOT f = ANY(ps.wild)\n"
        "            AND (f = ANY(ss.wild) OR (f = ANY(ps.loose) AND f = ANY(ss.loose))))\n"
        "  END = cardinality(ps.fields)\n"
        "UNION ALL\n"
        f"{covered_only}"
    )
