"""One experiment: generate a workload, load it into each strategy, time batches of matches.

Every timed match also returns its pairs: the strategies must return the same pairs for
every batch, each repeat of a batch must return what its first run returned, and where
it is affordable the plain-Python oracle of SPEC 3 (``matching.matches`` over every pair,
streamed from the workload's text files) must agree too. The Spark batch matcher, when
the run includes it, must return ``range``'s pairs for every batch (``spark_matcher``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from matching.semantics import matches
from matching.store import ConstraintStore, DatabaseStore, PaperStore, RangeStore, open_store
from matching.store.explain import explain_publications
from matching.store.rules import intermediate_query
from matching.workload import Workload, generate, iter_items, load_workload

from .spark_matcher import SparkRun, spark_match_batches
from .timing import Budget, Pair, Repeats, repeat

# Oracle budget: publications x subscriptions x predicates per constraint.
ORACLE_LIMIT = 4_000_000


@dataclass
class BatchResult:
    batch: int
    pairs: int = 0
    times: dict[str, Repeats] = field(default_factory=dict)  # strategy -> repeats
    phases: dict[str, Repeats] = field(default_factory=dict)  # paper: intermediate/final
    identical: bool = True  # every strategy and repeat returned the same pairs
    oracle: bool | None = None  # None: not affordable

    def as_dict(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "pairs": self.pairs,
            "times": {k: v.as_dict() for k, v in self.times.items()},
            "phases": {k: v.as_dict() for k, v in self.phases.items()},
            "identical": self.identical,
            "oracle": self.oracle,
        }


@dataclass
class Experiment:
    workload: Workload
    generation: dict[str, float] = field(default_factory=dict)
    loads: dict[str, dict[str, float]] = field(default_factory=dict)
    batches: list[BatchResult] = field(default_factory=list)
    plans: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    spark: SparkRun | None = None  # the Spark batch matcher, when the run includes it
    # A bare round trip to PostgreSQL (``SELECT 1`` on the stores' connection), timed as the
    # matches are and right after them: SPEC 9's floor for the fixed geometric workload.
    round_trip: Repeats | None = None

    @property
    def identical(self) -> bool:
        stores = all(b.identical and b.oracle is not False for b in self.batches)
        return stores and (self.spark is None or self.spark.identical)

    def batch(self, size: int) -> BatchResult:
        return next(b for b in self.batches if b.batch == size)

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload.as_dict(),
            "generation": self.generation,
            "loads": self.loads,
            "batches": [b.as_dict() for b in self.batches],
            "plans": {k: [list(p) for p in v] for k, v in self.plans.items()},
            **({"spark": self.spark.as_dict()} if self.spark is not None else {}),
            **({"round_trip": self.round_trip.as_dict()} if self.round_trip is not None else {}),
            "identical": self.identical,
        }


@dataclass
class Context:
    spark: Any
    conn: psycopg.Connection[Any]
    work: Path
    namespace_prefix: str
    strategies: tuple[str, ...]
    budget: Budget
    seed: int
    log: Callable[[str], None]
    spark_budget: Budget | None = None  # None: the run leaves out the Spark matcher


def round_trip(ctx: Context) -> Repeats:
    """A bare round trip to PostgreSQL on the connection the stores use (``SELECT 1``,
    its row fetched), warmed up and repeated under the matches' budget."""

    def run() -> None:
        ctx.conn.execute("SELECT 1").fetchone()

    started = time.perf_counter()
    run()
    warm = time.perf_counter() - started
    for _ in range(ctx.budget.warm - 1):
        if time.perf_counter() - started > ctx.budget.warm_seconds:
            break
        run()
    return repeat(run, ctx.budget, warm)


def paper_phases(store: PaperStore, ids: list[int]) -> tuple[float, float, set[Pair]]:
    """One match of the ``paper`` strategy, timed as seed 000 splits it (section 3.2).

    The same statements as ``PaperStore.match_publications``, in the same transaction:
    clearing and filling the intermediate answer (one INSERT per operator combination
    present), then the final aggregation.
    """
    params = {"ids": ids}
    with store.atomic() as cur:
        started = time.perf_counter()
        cur.execute(f"SELECT {store.q('clear_intermediate_answer')}()")
        for t, pub_op, sub_op in store.combinations(cur):
            cur.execute(
                intermediate_query(store.namespace, t, pub_op, sub_op, "publications"), params
            )
        middle = time.perf_counter()
        cur.execute(store.final_aggregation_sql())
        quads = cur.fetchall()
        ended = time.perf_counter()
    return middle - started, ended - middle, {(q[0], q[2]) for q in quads}


def oracle_pairs(directory: Path, ids: list[int]) -> set[Pair]:
    """Every matching pair by the plain-Python semantics, streaming the subscriptions."""
    wanted = set(ids)
    pubs = [(i, c) for i, c in iter_items(directory, "pubs") if i in wanted]
    found: set[Pair] = set()
    for s, sub in iter_items(directory, "subs"):
        for p, pub in pubs:
            if matches(pub, sub):
                found.add((p, s))
    return found


def oracle_cost(w: Workload, batch: int) -> int:
    per_constraint = int(w.parameters().get("terms", 1))
    return batch * w.subs * per_constraint


def run_experiment(
    ctx: Context,
    w: Workload,
    batches: list[int],
    *,
    paper_phase_times: bool = False,
    explain_batches: tuple[int, ...] = (),
    spark_batches: tuple[int, ...] = (),
) -> Experiment:
    """Generate ``w``, then per strategy load it, time every batch, and drop the store;
    then the Spark matcher on ``spark_batches`` (some of ``batches``), checked against
    ``range``'s pairs (when ``ctx.spark_budget`` is set).

    A batch of size B is publications 1..B of the workload, matched in one call.
    """
    exp = Experiment(w)
    directory = ctx.work / f"{w.kind}-{w.subs}-{w.pubs}"
    ctx.log(f"generating {w.kind}: {w.subs:,} subscriptions, {w.pubs:,} publications")
    exp.generation = dict(generate(ctx.spark, w, directory).seconds)
    results = {b: BatchResult(b) for b in batches}
    exp.batches = [results[b] for b in batches]
    first: dict[int, set[Pair]] = {}
    answers: dict[str, dict[int, set[Pair]]] = {}  # strategy -> batch -> its first answer
    for strategy in ctx.strategies:
        namespace = f"{ctx.namespace_prefix}_{strategy}"
        loaded = load_workload(
            ctx.conn, directory, strategy=strategy, namespace=namespace, replace=True
        )
        exp.loads[strategy] = loaded.seconds
        ctx.log(
            f"  {strategy}: loaded in {loaded.seconds['total']:.1f} s "
            f"(indexes {loaded.seconds['indexes']:.1f} s, statistics "
            f"{loaded.seconds['statistics']:.1f} s)"
        )
        store = open_store(ctx.conn, strategy=strategy, namespace=namespace)
        assert isinstance(store, DatabaseStore)
        try:
            for b in batches:
                r = results[b]
                ids = list(range(1, b + 1))
                started = time.perf_counter()
                pairs = store.match_publications(ids)
                warm = time.perf_counter() - started
                for _ in range(ctx.budget.warm - 1):
                    if time.perf_counter() - started > ctx.budget.warm_seconds:
                        break
                    if store.match_publications(ids) != pairs:
                        r.identical = False
                answers.setdefault(strategy, {})[b] = pairs
                if b not in first:
                    first[b] = pairs
                    r.pairs = len(pairs)
                elif pairs != first[b]:
                    r.identical = False

                def run(store: ConstraintStore = store, ids: list[int] = ids, b: int = b) -> None:
                    if store.match_publications(ids) != first[b]:
                        results[b].identical = False

                r.times[strategy] = repeat(run, ctx.budget, warm)
                if paper_phase_times and isinstance(store, PaperStore):
                    phases = {"intermediate": Repeats(), "final": Repeats()}
                    for _ in range(len(r.times[strategy].seconds)):
                        a, f, got = paper_phases(store, ids)
                        phases["intermediate"].seconds.append(a)
                        phases["final"].seconds.append(f)
                        if got != first[b]:
                            r.identical = False
                    r.phases = phases
                if b in explain_batches and isinstance(store, PaperStore | RangeStore):
                    exp.plans[f"{strategy}:{b}"] = explain_publications(store, ids)
                ctx.log(
                    f"    batch {b:>5}: median {r.times[strategy].median * 1000:9.2f} ms over "
                    f"{len(r.times[strategy].seconds)} runs, {len(pairs)} pairs"
                    + ("" if r.identical else "  PAIRS DIFFER")
                )
        finally:
            store.drop()
    exp.round_trip = round_trip(ctx)
    ctx.log(f"  a bare round trip: median {exp.round_trip.median * 1000:.3f} ms")
    # One pass of the oracle over the largest affordable batch answers the smaller ones:
    # batch B is publications 1..B.
    affordable = [b for b in batches if oracle_cost(w, b) <= ORACLE_LIMIT]
    if affordable:
        truth = oracle_pairs(directory, list(range(1, max(affordable) + 1)))
        for b in affordable:
            r = results[b]
            r.oracle = {(p, s) for p, s in truth if p <= b} == first[b]
            ctx.log(f"    batch {b:>5}: oracle {'agrees' if r.oracle else 'DISAGREES'}")
    if ctx.spark_budget is not None and spark_batches:
        exp.spark = spark_match_batches(
            ctx.spark, directory, list(spark_batches), answers["range"], ctx.spark_budget, ctx.log
        )
    return exp
