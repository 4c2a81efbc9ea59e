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
import math
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
    Type,
    Wildcard,
)

from . import open_store
from .base import Item
from .paper import PaperStore
from .ranges import RangeStore
from .rules import intermediate_query


def plan_of(cur: psycopg.Cursor[Any], sql: str, params: Any = None) -> dict[str, Any]:
    """The executed plan of one statement, as PostgreSQL's JSON (the statement runs)."""
    cur.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
    document = cur.fetchone()[0]  # type: ignore[index]
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


def _one(attribute: Attribute, pred: Any) -> Constraint:
    return Constraint((Disjunct(((attribute, pred),)),))


def fixed_workload(subs: int, pubs: int, seed: int) -> tuple[list[Item], list[Item]]:
    """``int x = R``, R uniform in 1..subs*pubs/5: about five matches in all."""
    rng = random.Random(seed)
    top = max(1, subs * pubs // 5)
    x = Attribute("x", Type.INT)

    def draw() -> Constraint:
        r = rng.randint(1, top)
        return _one(x, Interval(r, True, r, True))

    return [(i, draw()) for i in range(pubs)], [(i, draw()) for i in range(subs)]


def geometric_workload(subs: int, pubs: int, seed: int) -> tuple[list[Item], list[Item]]:
    """Subscriptions ``b OVERLAPS`` a tiny box, publications ``b =`` a box of area 5/(subs*pubs)."""
    rng = random.Random(seed)
    b = Attribute("b", Type.BOX)
    eps = 1e-9
    width = math.sqrt(5 / (subs * pubs))

    def sub() -> Constraint:
        x, y = rng.random(), rng.random()
        return _one(b, BoxOverlaps(Box(x, y, x + eps, y + eps)))

    def pub() -> Constraint:
        x, y = rng.uniform(0, 1 - width), rng.uniform(0, 1 - width)
        return _one(b, BoxEq(Box(x, y, x + width, y + width)))

    return [(i, pub()) for i in range(pubs)], [(i, sub()) for i in range(subs)]


def large_intermediate_workload(subs: int, pubs: int, seed: int) -> tuple[list[Item], list[Item]]:
    """``int x1 = R1 AND ... AND int xn = Rn``, R in {0, 1}, n such that about five match.

    Each term matches half the other side, so the intermediate results are large
    although the matches are few.
    """
    rng = random.Random(seed)
    n = max(1, round(math.log2(max(2, subs * pubs / 5))))
    fields = [Attribute(f"x{k}", Type.INT) for k in range(1, n + 1)]

    def draw() -> Constraint:
        items = []
        for attribute in fields:
            r = rng.randint(0, 1)
            items.append((attribute, Interval(r, True, r, True)))
        return Constraint((Disjunct(tuple(items)),))

    return [(i, draw()) for i in range(pubs)], [(i, draw()) for i in range(subs)]


def wildcard_workload(subs: int, pubs: int, seed: int) -> tuple[list[Item], list[Item]]:
    """The fixed workload where every subscription also accepts any ``y`` (``int y = *``).

    Publications say ``int x = R AND int y = R'``; the matches are those of the fixed
    workload, and the wildcards should cost nothing.
    """
    rng = random.Random(seed)
    top = max(1, subs * pubs // 5)
    x, y = Attribute("x", Type.INT), Attribute("y", Type.INT)

    def point(r: int) -> Interval:
        return Interval(r, True, r, True)

    def pub() -> Constraint:
        items = ((x, point(rng.randint(1, top))), (y, point(rng.randint(1, top))))
        return Constraint((Disjunct(items),))

    def sub() -> Constraint:
        return Constraint((Disjunct(((x, point(rng.randint(1, top))), (y, Wildcard()))),))

    return [(i, pub()) for i in range(pubs)], [(i, sub()) for i in range(subs)]


WORKLOADS = {
    "wildcard": wildcard_workload,
    "fixed": fixed_workload,
    "geometric": geometric_workload,
    "large_intermediate": large_intermediate_workload,
}


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
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="fixed")
    parser.add_argument("--subs", type=int, default=200_000)
    parser.add_argument("--pubs", type=int, default=1, help="publications matched as one batch")
    parser.add_argument("--strategies", default="paper,range")
    parser.add_argument("--repeat", type=int, default=20, help="timed matches after the EXPLAIN")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-plans", action="store_true", help="only time the matches")
    args = parser.parse_args(argv)

    pubs, subs = WORKLOADS[args.workload](args.subs, args.pubs, args.seed)
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
