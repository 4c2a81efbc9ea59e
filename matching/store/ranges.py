"""The ``range`` strategy: predicates as range and box values, index joins per type.

Storage. A predicate on an ordered type is one PostgreSQL range value (int8range,
numrange, ``floatrange``, daterange, tstzrange, ``textrange`` with the "C"
collation; the last two are range types created in the store's schema) in
``<type>_pubs(id, disjunct_id, shape, field, pt, val, whole)``; whether two
predicates intersect is ``&&``. Single values (``lot = 5``, the commonest predicate by
far) also keep the value itself in ``pt``. Two indexes share the work, both covering
``(id, disjunct_id, shape)`` so that scans need not visit the table:

* a GiST index on ``(val, field)`` over the intervals only (``WHERE pt IS NULL``);
  the value leads because GiST splits pages on the first column, and ranges spread
  far better than field names;
* a B-tree on ``(field, pt, shape)`` over the single values, which finds an equal
  value (or the values inside an interval) in a few comparisons where a GiST probe
  costs tens of microseconds, and makes equalities hash-joinable for large batches;
  ``shape`` last lets a probe skip one shape (below).

Points and boxes are native ``box`` values (a point ``= p`` is the box (p, p),
``WITHIN B`` is B) with a GiST index on ``(val, field)``. PostgreSQL's geometric
operators compare with a tolerance of 1e-6, so every geometric test is the
indexable operator followed by the exact test on the corners (``rules``). Two
point predicates intersect iff their boxes share a point. A box predicate keeps
its operator; by SPEC 3.2 each operator pair is one relation between the two
operand boxes (share a point, one inside the other, equal) or "always".

So each type contributes a few index-driven branches to one statement, one per kind
of pair that occurs (tracked in ``used_operators`` as the paper tracks operators),
never a join that scans a table.

Wildcards and the "always" box pairs never become rows that join with everything.
They are described per disjunct by its *shape*: the type-qualified field keys
(``int:lot``) of all its predicates (``fields``), of its wildcards (``wild``), of
its OVERLAPS/CONTAINS box predicates (``loose``) and of the rest (``tight``).
Shapes are rows of ``<side>_shapes``, shared by every disjunct written the same way;
master and predicate rows carry the shape's id, which ``shape_ids`` hands out for both
sides (a shape has the same id on either side).

Publication disjunct dp matches subscription disjunct ds iff every field of dp is
in ``fields(ds)`` and each field f of dp is *covered* (f is a wildcard in dp or in
ds, or loose in both) or *hit* (the two predicates on f intersect). Matches come
from three disjoint sources:

(a) pairs with at least one hit, found by the index joins, counted per pair and
    kept when the hits are all the fields of dp that are not covered (worked out
    once per pair of shapes);
(b) pairs with no hit at all: every tight field of dp is a wildcard of ds, every
    loose field of dp is a wildcard or loose in ds, and ds has every wildcard field
    of dp. This is decided between shapes alone (a scan of the small shape table)
    and then expanded to the disjuncts of the qualifying shapes through an index,
    so every row it reads is a match;
(c) pairs of *whole* disjuncts of one shape. A whole disjunct has two or more
    predicates, all single values of ordered types (``a = 1 AND s = 'x'``); its
    shape is marked whole (a shape of its own), its master row keeps ``vkey``, a
    digest of its values in field order, and its type rows ``whole``. Two whole
    disjuncts of one shape match iff their values are equal, so one probe of the
    B-tree on ``<side>_master(shape, vkey)`` finds them all, however many of their
    predicates meet one by one. The index joins of (a) skip these pairs: a whole
    row looks up the other side's single values outside its own shape only.

So a wildcard subscription that cannot match a publication is never read while
matching it: it has no rows in the type tables, and its shape fails (b). And a
whole publication (a conjunction of equalities) reads, of the subscriptions of its
own shape, only those equal to it, however many agree with it on some fields (the
paper's "large intermediate" workload); subscriptions with more fields, or with
ranges, are counted as before.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any

import psycopg

from matching import model

from .base import DisjunctPair, Item, check_ids
from .database import SIDES, DatabaseStore, Index, Side, chunked
from .encode import (
    GEOMETRIC_OPS,
    SCALAR_SQL_TYPES,
    TYPES,
    box_text,
    check_storable,
    field_key,
    range_text,
    value_key,
    value_text,
)
from .range_query import (
    INTERVAL,
    POINT_VALUE,
    WHOLE_VALUE,
    WILDCARD,
    Combinations,
    Scope,
    combinations_of,
    kinds_sql,
    match_sql,
)
from .rules import TABLE_NAMES
from .sql import bump_counters, copy_rows, insert_new_counters

RANGE_TYPES: dict[model.Type, str] = {
    model.Type.INT: "int8range",
    model.Type.DECIMAL: "numrange",
    model.Type.FLOAT: "floatrange",  # created in the store's schema
    model.Type.DATE: "daterange",
    model.Type.TIMESTAMP: "tstzrange",
    model.Type.STRING: "textrange",  # created in the store's schema
}

_LOOSE = (model.BoxOverlaps, model.BoxContains)

# What the match reads from a predicate row, carried in its indexes so that scans
# need not visit the table (once VACUUM has marked the pages all-visible).
_COVERING = "INCLUDE (id, disjunct_id, shape)"


# -- shapes ------------------------------------------------------------------------------

# The role of a field in a disjunct, as the shape records it.
_TIGHT, _WILD, _LOOSE_ROLE = 0, 1, 2


class Shape:
    """The field keys of one disjunct by role; ``key`` identifies the shape.

    A *whole* shape is that of a disjunct whose predicates are all single values of
    ordered types, at least two of them; it is a shape of its own (another key) even
    where a disjunct with intervals has the same fields.
    """

    __slots__ = ("fields", "wild", "loose", "tight", "whole", "key")

    def __init__(self, signature: tuple[tuple[str, int], ...], whole: bool) -> None:
        self.fields = sorted(key for key, _ in signature)
        self.wild = sorted(key for key, role in signature if role == _WILD)
        self.loose = sorted(key for key, role in signature if role == _LOOSE_ROLE)
        self.tight = sorted(key for key, role in signature if role == _TIGHT)
        self.whole = whole
        described: list[Any] = [self.fields, self.wild, self.loose]
        if whole:
            described.append("whole")
        digest = hashlib.blake2b(json.dumps(described).encode(), digest_size=16).digest()
        self.key = uuid.UUID(bytes=digest)


def _role(pred: Any) -> int:
    kind = type(pred)
    if kind is model.Wildcard:
        return _WILD
    return _LOOSE_ROLE if kind in _LOOSE else _TIGHT


def _single(pred: Any) -> bool:
    """Whether a predicate is one value of an ordered type (``lot = 5``)."""
    return type(pred) is model.Interval and pred.lo is not None and pred.lo == pred.hi


def is_whole(disjunct: model.Disjunct) -> bool:
    """Two or more predicates, every one a single value of an ordered type."""
    items = disjunct.items
    return len(items) > 1 and all(_single(pred) for _, pred in items)


_ShapeCache = dict[tuple[tuple[tuple[str, int], ...], bool], Shape]


def _shape_of(disjunct: model.Disjunct, whole: bool, cache: _ShapeCache) -> Shape:
    # Disjuncts differ in values far more often than in shape: look the shape up by
    # its signature instead of sorting and hashing for every disjunct.
    signature = tuple((field_key(a), _role(pred)) for a, pred in disjunct.items)
    shape = cache.get((signature, whole))
    if shape is None:
        shape = Shape(signature, whole)
        if len(cache) < 100_000:
            cache[(signature, whole)] = shape
    return shape


def whole_key(disjunct: model.Disjunct) -> uuid.UUID:
    """The values of a whole disjunct, in the order of its field keys, as one digest.

    Two whole disjuncts of one shape (the same field keys) get the same key exactly
    when every value is equal (``value_key`` writes equal values alike), so that
    equality of keys decides whether they match (up to a collision of 128-bit
    BLAKE2b digests, the same assumption the shape keys make). Each value is
    prefixed with its length, so no value can run into the next.
    """
    values = sorted(
        (field_key(a), value_key(a.type, _equal_value(pred))) for a, pred in disjunct.items
    )
    text = "".join(f"{len(f)}:{f}{len(v)}:{v}" for f, v in values)
    return uuid.UUID(bytes=hashlib.blake2b(text.encode(), digest_size=16).digest())


def _equal_value(pred: model.Predicate) -> model.Value:
    # A whole disjunct is one of equalities only (see ``Shape``).
    assert isinstance(pred, model.Interval) and pred.lo is not None
    return pred.lo


# -- rows --------------------------------------------------------------------------------


def _row(
    t: model.Type, i: int, j: int, key: int, name: str, pred: Any, whole: bool
) -> tuple[Any, ...]:
    """A non-wildcard predicate as a row of its type table (values as text).

    The fifth item is the row's kind (for ``used_operators``), not a column.
    """
    kind = type(pred)
    if kind is model.Interval:
        single = _single(pred)
        pt = value_text(t, pred.lo) if single else None
        kind_name = (WHOLE_VALUE if whole else POINT_VALUE) if single else INTERVAL
        return (i, j, key, name, kind_name, pt, range_text(t, pred), whole)
    if kind is model.PointEq:
        p = pred.point
        return (i, j, key, name, INTERVAL, f"({p.x!r},{p.y!r}),({p.x!r},{p.y!r})")
    if kind is model.PointWithin:
        return (i, j, key, name, INTERVAL, box_text(pred.box))
    return (i, j, key, name, GEOMETRIC_OPS[kind], box_text(pred.box))


def _columns(t: model.Type) -> list[str]:
    if t.ordered:
        return ["id", "disjunct_id", "shape", "field", "pt", "val", "whole"]
    if t is model.Type.BOX:
        return ["id", "disjunct_id", "shape", "field", "op", "val"]
    return ["id", "disjunct_id", "shape", "field", "val"]


class RangeStore(DatabaseStore):
    strategy = "range"
    extensions = ("btree_gist",)

    # Deltas of the shared counters (``used_operators``, the shapes' ``n``) not written yet
    # (``defer_counters``); None while they are written at once.
    _deferred: Counter[tuple[str, str, str]] | None = None
    _deferred_shapes: dict[Side, Counter[int]]

    def defer_counters(self) -> None:
        """Write the counters of rows that exist only at ``flush_counters``.

        The counters are a few rows that nearly every write updates (``used_operators``:
        one per kind of predicate; the shapes: one per way of writing a constraint). A
        transaction that updates one holds it to commit, so two transactions that write
        the store wait for each other from their first write to the first one's commit:
        the matching cycles of different markets would run one after the other. Deferred,
        a key that has no row yet is still inserted at once (it must be seen by this
        transaction's matching), the rest is added at ``flush_counters``, which the
        caller runs late, serialized with other writers' flushes, just before commit.

        While counters are deferred, rows that fall to zero are kept (another writer may
        have counted on the row when it deferred its own delta), and readers take every
        row: a kind or shape with nothing left only adds an empty branch to matching.
        """
        self._deferred = Counter()
        self._deferred_shapes = {"pub": Counter(), "sub": Counter()}

    def flush_counters(self) -> None:
        used = self._deferred
        if used is None:
            return
        self._deferred = None
        with self.atomic() as cur:
            bump_counters(
                cur, self.q("used_operators"), ["type", "side", "op"], used, keep_zero=True
            )
            for side, deltas in self._deferred_shapes.items():
                changes = sorted((i, d) for i, d in deltas.items() if d)
                if changes:
                    cur.execute(
                        f"UPDATE {self.q(f'{side}_shapes')} t SET n = t.n + d.n"
                        " FROM unnest(%s::int4[], %s::int8[]) AS d(id, n) WHERE t.id = d.id",
                        [[i for i, _ in changes], [d for _, d in changes]],
                    )

    def _bump_used(self, cur: psycopg.Cursor[Any], deltas: Counter[tuple[str, str, str]]) -> None:
        table, columns = self.q("used_operators"), ["type", "side", "op"]
        if self._deferred is None:
            bump_counters(cur, table, columns, deltas)
            return
        self._deferred.update(insert_new_counters(cur, table, columns, deltas))

    def table(self, t: model.Type, side: Side) -> str:
        return self.q(f"{TABLE_NAMES[t]}_{side}s")

    def _ddl(self) -> list[str]:
        statements = [
            f"CREATE TYPE {self.q('floatrange')} AS RANGE"
            " (subtype = float8, subtype_diff = float8mi)",
            f'CREATE TYPE {self.q("textrange")} AS RANGE (subtype = text, collation = "C")',
            f"CREATE TABLE {self.q('used_operators')} (type text NOT NULL, side text NOT NULL,"
            " op text NOT NULL, n int8 NOT NULL, PRIMARY KEY (type, side, op))",
            # Does nothing; PARALLEL UNSAFE keeps the statements that call it serial.
            f"CREATE FUNCTION {self.q('serial')}() RETURNS boolean LANGUAGE sql IMMUTABLE"
            " PARALLEL UNSAFE AS 'SELECT true'",
            # Shape ids for both sides: a shape has one id whichever side uses it.
            f"CREATE TABLE {self.q('shape_ids')} ("
            "id int4 GENERATED ALWAYS AS IDENTITY PRIMARY KEY, key uuid NOT NULL UNIQUE)",
        ]
        for side in SIDES:
            statements.append(
                f"CREATE TABLE {self.master(side)} (id int8 NOT NULL, disjunct_id int4 NOT NULL,"
                " count int4 NOT NULL, shape int4 NOT NULL, vkey uuid)"
            )
            statements.append(
                f"CREATE TABLE {self.q(f'{side}_shapes')} ("
                "id int4 PRIMARY KEY, key uuid NOT NULL UNIQUE,"
                " fields text[] NOT NULL, wild text[] NOT NULL, loose text[] NOT NULL,"
                " tight text[] NOT NULL, n int8 NOT NULL)"
            )
            for t in TYPES:
                if t.ordered:
                    name = RANGE_TYPES[t]
                    if name in ("floatrange", "textrange"):
                        name = self.q(name)
                    values = f"pt {SCALAR_SQL_TYPES[t]}, val {name} NOT NULL, whole bool NOT NULL"
                elif t is model.Type.BOX:
                    values = "op text NOT NULL, val box NOT NULL"
                else:
                    values = "val box NOT NULL"
                statements.append(
                    f"CREATE TABLE {self.table(t, side)} (id int8 NOT NULL,"
                    ' disjunct_id int4 NOT NULL, shape int4 NOT NULL, field text COLLATE "C"'
                    f" NOT NULL, {values})"
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
            indexes.append(
                Index(
                    side,
                    f"{side}_master_vkey_idx",
                    "(shape, vkey) INCLUDE (id, disjunct_id) WHERE vkey IS NOT NULL",
                    master,
                )
            )
            for t in TYPES:
                name, table = f"{TABLE_NAMES[t]}_{side}s", self.table(t, side)
                if t.ordered:
                    indexes.append(
                        Index(
                            side,
                            f"{name}_pt_idx",
                            "(field, pt, shape) INCLUDE (id, disjunct_id) WHERE pt IS NOT NULL",
                            table,
                        )
                    )
                    gist = f"USING gist (val, field) {_COVERING} WHERE pt IS NULL"
                else:
                    gist = f"USING gist (val, field) {_COVERING}"
                indexes.append(Index(side, f"{name}_val_idx", gist, table))
                indexes.append(Index(side, f"{name}_id_idx", "(id)", table))
        return indexes

    # -- writing --------------------------------------------------------------------------

    def _write(self, cur: psycopg.Cursor[Any], side: Side, items: Iterable[Item]) -> int:
        used: Counter[tuple[str, str, str]] = Counter()
        cache: _ShapeCache = {}
        ids: dict[uuid.UUID, int] = {}
        total = 0
        for chunk in chunked(items):
            check_ids(i for i, _ in chunk)
            for _, constraint in chunk:
                check_storable(constraint)
            # Shapes first: the rows name them by the id the shape table gives them.
            shaped = [
                [
                    _shape_of(disjunct, is_whole(disjunct), cache)
                    for disjunct in constraint.disjuncts
                ]
                for _, constraint in chunk
            ]
            counts = Counter(shape for shapes in shaped for shape in shapes)
            ids.update(self._add_shapes(cur, side, list(counts.items())))
            masters: list[tuple[int, int, int, int, uuid.UUID | None]] = []
            rows: dict[model.Type, list[tuple[Any, ...]]] = {}
            for (i, constraint), shapes in zip(chunk, shaped, strict=True):
                for j, disjunct in enumerate(constraint.disjuncts):
                    shape = shapes[j]
                    shape_id = ids[shape.key]
                    vkey = whole_key(disjunct) if shape.whole else None
                    masters.append((i, j, len(disjunct.items), shape_id, vkey))
                    for attribute, pred in disjunct.items:
                        if type(pred) is model.Wildcard:
                            used[(attribute.type.value, side, WILDCARD)] += 1
                            continue
                        t = attribute.type
                        row = _row(t, i, j, shape_id, attribute.name, pred, shape.whole)
                        used[(t.value, side, row[4])] += 1
                        if t is not model.Type.BOX:
                            row = row[:4] + row[5:]  # the kind is bookkeeping, not a column
                        rows.setdefault(t, []).append(row)
            copy_rows(
                cur, self.master(side), ["id", "disjunct_id", "count", "shape", "vkey"], masters
            )
            for t, type_rows in rows.items():
                copy_rows(cur, self.table(t, side), _columns(t), type_rows)
            total += len(chunk)
        self._bump_used(cur, used)
        return total

    def _add_shapes(
        self, cur: psycopg.Cursor[Any], side: Side, counted: list[tuple[Shape, int]]
    ) -> dict[uuid.UUID, int]:
        """Count disjuncts into their shapes (created as needed); returns the shapes' ids.

        A shape's id comes from ``shape_ids``, which both sides share and which keeps
        every key it has seen, so the same shape has the same id on both sides.
        """
        if not counted:
            return {}
        counted.sort(key=lambda sn: sn[0].key)  # a fixed lock order between writers
        keys = [s.key for s, _ in counted]
        registry = self.q("shape_ids")
        cur.execute(
            f"WITH new AS (INSERT INTO {registry} (key)"
            f" SELECT k FROM unnest(%(keys)s::uuid[]) k"
            f" WHERE NOT EXISTS (SELECT FROM {registry} r WHERE r.key = k) ORDER BY k"
            " ON CONFLICT (key) DO NOTHING RETURNING key, id)"
            f" SELECT key, id FROM new UNION ALL"
            f" SELECT key, id FROM {registry} WHERE key = ANY(%(keys)s::uuid[])",
            {"keys": keys},
        )
        ids = dict(cur.fetchall())
        if len(ids) < len(keys):
            # Another writer added a key after this statement's snapshot was taken.
            cur.execute(
                f"SELECT key, id FROM {registry} WHERE key = ANY(%s::uuid[])",
                [[k for k in keys if k not in ids]],
            )
            ids.update(cur.fetchall())
        shapes = self.q(f"{side}_shapes")
        if self._deferred is not None:
            # Deferred: a shape without a row gets one counting nothing (DO NOTHING takes no
            # lock on a row that exists), and every count waits for the flush.
            cur.execute(f"SELECT key FROM {shapes} WHERE key = ANY(%s::uuid[])", [keys])
            present = {row[0] for row in cur.fetchall()}
            for shape, n in counted:
                self._deferred_shapes[side][ids[shape.key]] += n
            counted = [(shape, 0) for shape, _ in counted if shape.key not in present]
            conflict = "DO NOTHING"
        else:
            conflict = "DO UPDATE SET n = t.n + EXCLUDED.n"
        if counted:
            cur.executemany(
                f"INSERT INTO {shapes} AS t (id, key, fields, wild, loose, tight, n)"
                " VALUES (%s, %s, %s::text[], %s::text[], %s::text[], %s::text[], %s)"
                f" ON CONFLICT (key) {conflict}",
                [(ids[s.key], s.key, s.fields, s.wild, s.loose, s.tight, n) for s, n in counted],
            )
        return ids

    def _delete(self, cur: psycopg.Cursor[Any], side: Side, ids: list[int]) -> None:
        deferred = self._deferred is not None
        cur.execute(
            f"SELECT DISTINCT type FROM {self.q('used_operators')} WHERE side = %s"
            + ("" if deferred else " AND n > 0"),
            [side],
        )
        removed: Counter[tuple[str, str, str]] = Counter()
        for (type_name,) in cur.fetchall():
            t = model.Type(type_name)
            if t.ordered:
                kind = (
                    f"CASE WHEN pt IS NULL THEN '{INTERVAL}'"
                    f" WHEN whole THEN '{WHOLE_VALUE}' ELSE '{POINT_VALUE}' END"
                )
            else:
                kind = "op" if t is model.Type.BOX else f"'{INTERVAL}'"
            cur.execute(
                f"WITH d AS (DELETE FROM {self.table(t, side)} WHERE id = ANY(%s::int8[])"
                f" RETURNING {kind} AS op) SELECT op, count(*) FROM d GROUP BY op",
                [ids],
            )
            for op, n in cur.fetchall():
                removed[(t.value, side, op)] -= n
        shapes = self.q(f"{side}_shapes")
        if deferred:
            # The same, with the shapes' counts left for the flush.
            cur.execute(
                f"WITH d AS (DELETE FROM {self.master(side)} WHERE id = ANY(%s::int8[])"
                " RETURNING shape) SELECT c.shape, c.n, t.wild FROM"
                " (SELECT shape, count(*) AS n FROM d GROUP BY shape) c"
                f" JOIN {shapes} t ON t.id = c.shape",
                [ids],
            )
            for shape, n, wild in cur.fetchall():
                self._deferred_shapes[side][shape] -= int(n)
                for w in wild:
                    removed[(w.split(":", 1)[0], side, WILDCARD)] -= int(n)
            self._bump_used(cur, removed)
            return
        # The wildcards that go: the wild fields of the deleted disjuncts' shapes, by type
        # (a field key starts with its type).
        cur.execute(
            f"WITH d AS (DELETE FROM {self.master(side)} WHERE id = ANY(%s::int8[])"
            " RETURNING shape), c AS (SELECT shape, count(*) AS n FROM d GROUP BY shape),"
            f" u AS (UPDATE {shapes} t SET n = t.n - c.n FROM c WHERE t.id = c.shape"
            " RETURNING t.wild, c.n)"
            " SELECT split_part(w, ':', 1), sum(u.n) FROM u, unnest(u.wild) w GROUP BY 1",
            [ids],
        )
        for type_name, n in cur.fetchall():
            removed[(type_name, side, WILDCARD)] -= int(n)
        cur.execute(f"DELETE FROM {shapes} WHERE n <= 0")
        bump_counters(cur, self.q("used_operators"), ["type", "side", "op"], removed)

    # -- matching -------------------------------------------------------------------------

    def combinations(self, cur: psycopg.Cursor[Any]) -> Combinations:
        """Per type with rows on both sides, the (pub kind, sub kind) pairs present.

        Only these can produce hits, and each needs its own branch of the query
        (the paper's optimisation of section 5, applied to branches).
        """
        return combinations_of(self._kinds(cur))

    def _kinds(self, cur: psycopg.Cursor[Any]) -> str:
        cur.execute(kinds_sql(self.namespace))
        return str(cur.fetchone()[0])  # type: ignore[index]  # an aggregate returns one row

    def match_sql(self, cur: psycopg.Cursor[Any], scope: Scope) -> str:
        """The one statement that matches a scope (ids in the ``%(ids)s`` parameter)."""
        return match_sql(self.namespace, self._kinds(cur), scope, scope != "all")

    def _match(self, scope: Scope, ids: list[int]) -> set[DisjunctPair]:
        """One statement, and one round trip, while the kinds present stay the same.

        The statement depends on the kinds present, which change rarely. So the
        statement of the kinds last seen in this namespace is run; it checks them in
        its own snapshot and answers a row of NULLs if they changed, and then the
        kinds are read again and the statement made for them is run. Statements of
        a batch scope are prepared on the server at once, so that their plans can be
        cached: a match of one publication is planned a few times, not every time.
        Read-only: no transaction of its own.
        """
        key = (self.conn.info.host, self.conn.info.port, self.conn.info.dbname, self.namespace)
        kinds = _KNOWN_KINDS.get(key)
        params = {"ids": ids}
        prepare = None if scope == "all" else True
        serial = scope != "all" and len(ids) <= SERIAL_BATCH
        with self.cursor() as cur:
            while True:
                if kinds is None:
                    kinds = self._kinds(cur)
                    _KNOWN_KINDS[key] = kinds
                sql = match_sql(self.namespace, kinds, scope, serial)
                cur.execute(sql, params, prepare=prepare)
                rows = cur.fetchall()
                if not rows or rows[0][0] is not None:
                    return set(rows)
                kinds = None


# Batches of up to this many ids are matched without parallel workers.
SERIAL_BATCH = 64

# The kinds each namespace had at its last match, per database (as ``kinds_sql`` writes
# them): a guess that every match checks (see ``RangeStore._match``), so a stale entry
# costs one more statement, no more.
_KNOWN_KINDS: dict[tuple[str, int | str, str, str], str] = {}
