"""The ``paper`` strategy: seed 000, sections 3.1, 3.2 and 5, under the paper's names.

Storage (section 3.1). Each disjunct of a publication is a row
``pub_master(id, disjunct_id, count)`` with its number of predicates; each
predicate a row ``<type>_pubs(p_id, p_disjunct_id, field, op, val, val2)`` in the
table of its type (``int_pubs``, ``decimal_pubs``, ..., ``box_pubs``), the value in
the type's own PostgreSQL column type. Subscriptions mirror this in ``sub_master``
and ``<type>_subs``. Indexes (section 3.2): ``(id, disjunct_id)`` on the master
tables, ``(op, val)`` on the predicate tables (with the field between them, since
every query joins on it), and for points and boxes, which have no multi-column
B-tree, ``(op, field)`` plus a GiST index on the value.

Matching (sections 3.2.1 and 3.2.2). ``used_operators`` tracks which operators
each side of each type uses (section 5's optimisation); ``rules`` generates one
``INSERT INTO intermediate_answer SELECT ...`` for every (type, publication
operator, subscription operator) present on both sides, and nothing for the other
combinations. The final aggregation then keeps the disjunct pairs whose summed
count equals the publication disjunct's predicate count. Unlike the query printed
in the paper it does not group by ``field``: grouping by field would compare the
count of one field (always 1) with the whole disjunct's count and miss every
disjunct of more than one predicate.

Wildcards are rows with operator ``*`` that meet every row of their field, as in
the paper; this is what the ``range`` strategy improves on.

``intermediate_answer`` is kept until the next match, so that it can be inspected.
Matches on one store take turns: the table is shared, and clearing it at the start
of a match locks it until the match's transaction ends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

import psycopg

from matching.model import Interval, PointEq, PointWithin, Type, Wildcard

from .base import DisjunctPair, Item, check_ids
from .database import SIDES, DatabaseStore, Index, Side, chunked
from .encode import (
    SCALAR_SQL_TYPES,
    TYPES,
    box_text,
    check_storable,
    operator,
    point_text,
    value_text,
)
from .rules import TABLE_NAMES, intermediate_query
from .sql import bump_counters, copy_rows

# A TRUNCATE costs milliseconds whatever the size (it makes new files), a DELETE of the
# few rows a small batch leaves is far cheaper; above this size TRUNCATE wins.
TRUNCATE_ABOVE = 8 * 1024 * 1024

_ID = {"pub": "p_id", "sub": "s_id"}
_DISJUNCT = {"pub": "p_disjunct_id", "sub": "s_disjunct_id"}


def _columns(t: Type, side: Side) -> list[str]:
    head = [_ID[side], _DISJUNCT[side], "field", "op"]
    if t is Type.POINT:
        return [*head, "val", "val_box"]
    if t is Type.BOX:
        return [*head, "val"]
    return [*head, "val", "val2"]


def _row(t: Type, i: int, j: int, name: str, pred: Any) -> tuple[Any, ...]:
    """One predicate as a row of its type table, values in their text form."""
    op = operator(pred)
    kind = type(pred)
    if kind is Wildcard:
        return (i, j, name, op, None) if t is Type.BOX else (i, j, name, op, None, None)
    if kind is Interval:
        if op in ("<", "<="):
            return (i, j, name, op, value_text(t, pred.hi), None)
        if op in (">", ">=", "="):
            return (i, j, name, op, value_text(t, pred.lo), None)
        return (i, j, name, op, value_text(t, pred.lo), value_text(t, pred.hi))
    if kind is PointEq:
        return (i, j, name, op, point_text(pred.point), None)
    if kind is PointWithin:
        return (i, j, name, op, None, box_text(pred.box))
    return (i, j, name, op, box_text(pred.box))


class PaperStore(DatabaseStore):
    strategy = "paper"

    def table(self, t: Type, side: Side) -> str:
        return self.q(f"{TABLE_NAMES[t]}_{side}s")

    def _ddl(self) -> list[str]:
        statements = []
        for side in SIDES:
            statements.append(
                f"CREATE TABLE {self.master(side)} ("
                "id int8 NOT NULL, disjunct_id int4 NOT NULL, count int4 NOT NULL)"
            )
            for t in TYPES:
                if t is Type.POINT:
                    values = "val point, val_box box"
                elif t is Type.BOX:
                    values = "val box"
                else:
                    values = f"val {SCALAR_SQL_TYPES[t]}, val2 {SCALAR_SQL_TYPES[t]}"
                statements.append(
                    f"CREATE TABLE {self.table(t, side)} ("
                    f"{_ID[side]} int8 NOT NULL, {_DISJUNCT[side]} int4 NOT NULL, "
                    f'field text COLLATE "C" NOT NULL, op text NOT NULL, {values})'
                )
        statements.append(
            f"CREATE UNLOGGED TABLE {self.q('intermediate_answer')} ("
            "p_id int8 NOT NULL, p_disjunct_id int4 NOT NULL, "
            "s_id int8 NOT NULL, s_disjunct_id int4 NOT NULL, "
            'field text COLLATE "C" NOT NULL, count int8 NOT NULL)'
        )
        answer = self.q("intermediate_answer")
        statements.append(
            f"CREATE FUNCTION {self.q('clear_intermediate_answer')}() RETURNS void"
            " LANGUAGE plpgsql AS $$ BEGIN\n"
            f"  LOCK TABLE {answer} IN SHARE ROW EXCLUSIVE MODE;\n"
            f"  IF pg_relation_size('{answer}') > {TRUNCATE_ABOVE} THEN TRUNCATE {answer};\n"
            f"  ELSE DELETE FROM {answer}; END IF;\n"
            "END $$"
        )
        statements.append(
            f"CREATE TABLE {self.q('used_operators')} ("
            "type text NOT NULL, side text NOT NULL, op text NOT NULL, n int8 NOT NULL, "
            "PRIMARY KEY (type, side, op))"
        )
        return statements

    def _indexes(self) -> list[Index]:
        indexes = []
        for side in SIDES:
            indexes.append(
                Index(
                    side,
                    f"{side}_master_id_disjunct_id_idx",
                    "(id, disjunct_id)",
                    self.master(side),
                    unique=True,
                )
            )
            for t in TYPES:
                name, table = f"{TABLE_NAMES[t]}_{side}s", self.table(t, side)
                if t.ordered:
                    indexes.append(Index(side, f"{name}_op_val_idx", "(op, field, val)", table))
                else:
                    indexes.append(Index(side, f"{name}_op_idx", "(op, field)", table))
                    indexes.append(Index(side, f"{name}_val_idx", "USING gist (val)", table))
                    if t is Type.POINT:
                        indexes.append(
                            Index(side, f"{name}_val_box_idx", "USING gist (val_box)", table)
                        )
                indexes.append(Index(side, f"{name}_id_idx", f"({_ID[side]})", table))
        return indexes

    # -- writing --------------------------------------------------------------------------

    def _write(self, cur: psycopg.Cursor[Any], side: Side, items: Iterable[Item]) -> int:
        used: Counter[tuple[str, str, str]] = Counter()
        total = 0
        for chunk in chunked(items):
            check_ids(i for i, _ in chunk)
            masters: list[tuple[int, int, int]] = []
            rows: dict[Type, list[tuple[Any, ...]]] = {}
            for i, constraint in chunk:
                check_storable(constraint)
                for j, disjunct in enumerate(constraint.disjuncts):
                    masters.append((i, j, len(disjunct.items)))
                    for attribute, pred in disjunct.items:
                        t = attribute.type
                        row = _row(t, i, j, attribute.name, pred)
                        rows.setdefault(t, []).append(row)
                        used[(t.value, side, row[3])] += 1
            copy_rows(cur, self.master(side), ["id", "disjunct_id", "count"], masters)
            for t, type_rows in rows.items():
                copy_rows(cur, self.table(t, side), _columns(t, side), type_rows)
            total += len(chunk)
        bump_counters(cur, self.q("used_operators"), ["type", "side", "op"], used)
        return total

    def _delete(self, cur: psycopg.Cursor[Any], side: Side, ids: list[int]) -> None:
        removed: Counter[tuple[str, str, str]] = Counter()
        for t in TYPES:
            cur.execute(
                f"WITH d AS (DELETE FROM {self.table(t, side)} WHERE {_ID[side]} = ANY(%s::int8[])"
                " RETURNING op) SELECT op, count(*) FROM d GROUP BY op",
                [ids],
            )
            for op, n in cur.fetchall():
                removed[(t.value, side, op)] -= n
        cur.execute(f"DELETE FROM {self.master(side)} WHERE id = ANY(%s::int8[])", [ids])
        bump_counters(cur, self.q("used_operators"), ["type", "side", "op"], removed)

    # -- matching -------------------------------------------------------------------------

    def combinations(self, cur: psycopg.Cursor[Any]) -> list[tuple[Type, str, str]]:
        """The (type, pub op, sub op) combinations present on both sides (section 5)."""
        cur.execute(f"SELECT type, side, op FROM {self.q('used_operators')} WHERE n > 0")
        ops: dict[tuple[str, str], list[str]] = {}
        for type_name, side, op in cur.fetchall():
            ops.setdefault((type_name, side), []).append(op)
        return [
            (t, pub_op, sub_op)
            for t in TYPES
            for pub_op in sorted(ops.get((t.value, "pub"), []))
            for sub_op in sorted(ops.get((t.value, "sub"), []))
        ]

    def final_aggregation_sql(self) -> str:
        return (
            "SELECT agg.p_id, agg.p_disjunct_id, agg.s_id, agg.s_disjunct_id\n"
            f"FROM {self.q('intermediate_answer')} agg\n"
            f"JOIN {self.master('pub')} pm"
            " ON agg.p_id = pm.id AND agg.p_disjunct_id = pm.disjunct_id\n"
            "GROUP BY agg.p_id, agg.p_disjunct_id, agg.s_id, agg.s_disjunct_id, pm.count\n"
            "HAVING sum(agg.count) = pm.count"
        )

    def _match(
        self, scope: Literal["all", "publications", "subscriptions"], ids: list[int]
    ) -> set[DisjunctPair]:
        params = {"ids": ids}
        with self.atomic() as cur:
            cur.execute(f"SELECT {self.q('clear_intermediate_answer')}()")
            queries = [
                intermediate_query(self.namespace, t, pub_op, sub_op, scope)
                for t, pub_op, sub_op in self.combinations(cur)
            ]
            if len(queries) > 1:
                with self.conn.pipeline():
                    for query in queries:
                        cur.execute(query, params)
            elif queries:
                cur.execute(queries[0], params)
            cur.execute(self.final_aggregation_sql())
            return set(cur.fetchall())

    def intermediate_answer(self) -> list[tuple[int, int, int, int, str, int]]:
        """The intermediate answer of the last match (paper, Figure 3)."""
        with self.cursor() as cur:
            cur.execute(
                "SELECT p_id, p_disjunct_id, s_id, s_disjunct_id, field, count"
                f" FROM {self.q('intermediate_answer')}"
            )
            return cur.fetchall()
