"""EXPLAIN the match of a batch of publications under each strategy, on the paper's workloads.

Run it as a module against a PostgreSQL database the role may create schemas in::

    python -m matching.store.explain --dsn postgresql://intersect:intersect@127.0.0.1:55433/intersect \\
        --workload fixed --subs 200000 --pubs 1

It loads the subscriptions of the workload (seed 000, section 5) into a scratch
store per strategy with ``bulk_load``, adds the publications, prints the plan of
every statement the match of those publications runs (``EXPLAIN (ANALYZE,
BUFFERS)``, so the statements really run), the number of matches and the median
time of a few further matches, and drops the scratch stores. ``docs/matching.md``
shows its output.

The helpers ``plan_of`` and ``rows_read`` are also what the tests use to check the
shape of plans (rows read per relation) rather than their speed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg

from matching.model import (
    Attribute,
    Box,
    BoxEq,
    BoxOverlaps,
    Constraint,
    Disjunct,
    Interval,
    Predicate,
    Type,
    Wildcard,
)
from matching.workload.parameters import (
    EPSILON_UNITS,
    GRID,
    KINDS,
    Workload,
    fixed_top,
    proportional_top,
    terms,
    width_units,
)

from . import open_store
from .base import Item
from .paper import PaperStore
from .ranges import RangeStore
from .rules import intermediate_query


def plan_of(cur: psycopg.Cursor[Any], sql: str, params: Any = None) -> dict[str, Any]:
    """The executed plan of one statement, as PostgreSQL's JSON (the statement runs)."""
    cur.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
    document = cur.fetchone()[0]  # type: ignore[index]  # EXPLAIN returns one row
    if isinstance(document, str):
        document = json.loads(document)
    plan: dict[str, Any] = document[0]["Plan"]
    return plan


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def rows_read(plan: dict[str, Any], relation: Callable[[str], bool]) -> int:
    """Rows the scans of matching relations produced or threw away, over all their loops."""
    total = 0
    for node in _nodes(plan):
        name = node.get("Relation Name")
        if name is None or not relation(name):
            continue
        per_loop = (
            node.get("Actual Rows", 0)
            + node.get("Rows Removed by Filter", 0)
            + node.get("Rows Removed by Index Recheck", 0)
        )
        total += per_loop * node.get("Actual Loops", 1)
    return total


# -- workloads (seed 000, section 5) --------------------------------------------------------
#
# The parameters (``fixed_top``, ``terms``, ``width_units``, ...) are those of
# ``matching.workload.parameters``, the ones ``ops/bench`` generates with Spark; only the
# draws differ: here they come from ``random.Random(seed)`` in this process, so EXPLAIN
# needs no Spark and no workload directory. The distributions, and so the expected
# matches, are the same.

WORKLOADS = ("wildcard", *KINDS)


def _one(attribute: Attribute, pred: Predicate) -> Constraint:
    return Constraint((Disjunct(((attribute, pred),)),))


def _equal(r: int) -> Interval:
    return Interval(r, True, r, True)


def workload_items(kind: str, subs: int, pubs: int, seed: int) -> tuple[list[Item], list[Item]]:
    """(publications, subscriptions) of a workload of ``parameters.KINDS`` or ``wildcard``.

    ``wildcard`` is the fixed workload where every subscription also accepts any ``y``
    (``int y = *``) and every publication states one: the matches are those of the fixed
    workload, and the wildcards should cost nothing.
    """
    w = Workload("fixed" if kind == "wildcard" else kind, subs, pubs, seed)  # checks them
    rng = random.Random(seed)
    x, y = Attribute("x", Type.INT), Attribute("y", Type.INT)
    draw: Callable[[str], Constraint]
    if kind in ("fixed", "proportional", "wildcard"):
        top = proportional_top(pubs) if kind == "proportional" else fixed_top(subs, pubs)

        def draw(side: str) -> Constraint:
            first = _equal(rng.randint(1, top))
            if kind != "wildcard":
                return _one(x, first)
            other: Predicate = _equal(rng.randint(1, top)) if side == "pubs" else Wildcard()
            return Constraint((Disjunct(((x, first), (y, other))),))

    elif kind == "large_intermediate":
        fields = [Attribute(f"x{k}", Type.INT) for k in range(1, terms(subs, pubs) + 1)]

        def draw(side: str) -> Constraint:
            return Constraint((Disjunct(tuple((f, _equal(rng.randint(0, 1))) for f in fields)),))

    else:
        b = Attribute("b", Type.BOX)
        width = width_units(subs, pubs)

        def draw(side: str) -> Constraint:
            size = width if side == "pubs" else EPSILON_UNITS
            ux, uy = rng.randint(0, GRID - size), rng.randint(0, GRID - size)
            box = Box(ux / GRID, uy / GRID, (ux + size) / GRID, (uy + size) / GRID)
            return _one(b, BoxEq(box) if side == "pubs" else BoxOverlaps(box))

    return (
        [(i, draw("pubs")) for i in range(w.pubs)],
        [(i, draw("subs")) for i in range(w.subs)],
    )


# -- explaining ---------------------------------------------------------------------------


def _text_plan(cur: psycopg.Cursor[Any], sql: str, params: Any) -> str:
    cur.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {sql}", params)
    return "\n".join(row[0] for row in cur.fetchall())


def explain_publications(store: PaperStore | RangeStore, ids: list[int]) -> list[tuple[str, str]]:
    """(statement, plan) for every statement matching these publications, in order."""
    params = {"ids": ids}
    out = []
    with store.atomic() as cur:
        if isinstance(store, RangeStore):
            sql = store.match_sql(cur, "publications")
            out.append((sql, _text_plan(cur, sql, params)))
            return out
        cur.execute(f"SELECT {store.q('clear_intermediate_answer')}()")
        for t, pub_op, sub_op in store.combinations(cur):
            sql = intermediate_query(store.namespace, t, pub_op, sub_op, "publications")
            out.append((sql, _text_plan(cur, sql, params)))
        sql = store.final_aggregation_sql()
        out.append((sql, _text_plan(cur, sql, None)))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--workload", choices=WORKLOADS, default="fixed")
    parser.add_argument("--subs", type=int, default=200_000)
    parser.add_argument("--pubs", type=int, default=1, help="publications matched as one batch")
    parser.add_argument("--strategies", default="paper,range")
    parser.add_argument("--repeat", type=int, default=20, help="timed matches after the EXPLAIN")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-plans", action="store_true", help="only time the matches")
    args = parser.parse_args(argv)

    pubs, subs = workload_items(args.workload, args.subs, args.pubs, args.seed)
    ids = [i for i, _ in pubs]
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        for strategy in args.strategies.split(","):
            store = open_store(
                conn, strategy=strategy, namespace=f"explain_{strategy}_{os.getpid()}"
            )
            assert isinstance(store, PaperStore | RangeStore)
            try:
                store.create()
                started = time.perf_counter()
                store.bulk_load(subscriptions=subs)
                loaded = time.perf_counter() - started
                store.add_publications(pubs)
                store.analyze()
                print(
                    f"=== {strategy}: {args.workload} workload, {args.subs:,} subscriptions "
                    f"(bulk load {loaded:.1f} s), a batch of {args.pubs:,} publication(s)"
                )
                if not args.no_plans:
                    for sql, plan in explain_publications(store, ids):
                        print(f"\n--- statement\n{sql}\n--- plan\n{plan}")
                matches = store.match_publications(ids)  # also warms the caches up
                times = []
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    store.match_publications(ids)
                    times.append(time.perf_counter() - started)
                median = statistics.median(times) * 1000 if times else float("nan")
                print(
                    f"\n=== {strategy}: {len(matches)} matching pairs; median match "
                    f"{median:.2f} ms over {len(times)} runs\n"
                )
            finally:
                store.drop()


if __name__ == "__main__":
    main()
