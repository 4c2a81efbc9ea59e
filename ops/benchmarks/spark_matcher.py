"""The Spark batch matcher (``matching.spark``) on an experiment's workload, beside ``range``.

Per workload, each side is read from the workload's Parquet, decoded on the executors with
the decoder the stores' load uses (``matching.workload.files.decoder``; a text it does not
recognise goes through ``matching.parse``) and encoded into the matcher's rows, which are
cached: that is its load, timed once. Then a batch of size B is ``match`` of publications
1..B against every subscription, collected to the driver, timed like the stores' matches
(untimed warm-up, then timed repeats). Every run must return exactly the pairs ``range``
returned for the same batch.

Runs in the benchmark's one SparkSession (the one that generated the workloads).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matching.spark import Encoded, encode_rdd, match
from matching.workload.files import decoder, distinct_texts, read_manifest, workload_of

from .timing import Budget, Pair, Repeats, repeat


@dataclass
class SparkBatch:
    batch: int
    pairs: int = 0
    times: Repeats = field(default_factory=Repeats)
    identical: bool = True  # every run returned range's pairs

    def as_dict(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "pairs": self.pairs,
            "times": self.times.as_dict(),
            "identical": self.identical,
        }


@dataclass
class SparkRun:
    load: dict[str, float] = field(default_factory=dict)  # seconds: subs, pubs
    rows: dict[str, int] = field(default_factory=dict)  # predicate rows per side
    batches: list[SparkBatch] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return all(b.identical for b in self.batches)

    def as_dict(self) -> dict[str, Any]:
        return {
            "load": self.load,
            "rows": self.rows,
            "batches": [b.as_dict() for b in self.batches],
            "identical": self.identical,
        }


def _encoded_side(spark: Any, directory: Path, side: str) -> Any:
    """One side of the workload as the matcher's cached rows (``matching.spark.Encoded``)."""
    w = workload_of(read_manifest(directory))
    fast = decoder(w)
    rows = w.pubs if side == "pubs" else w.subs
    distinct = distinct_texts(w)
    memoize = distinct is not None and distinct < rows

    def decode(part: Any) -> Any:
        # imported where this runs, in a Spark executor (cloudpickle ships the closure by value)
        import matching

        memo: dict[str, Any] = {}
        for row in part:
            text = row["constraint"]
            constraint = memo.get(text) if memoize else None
            if constraint is None:
                constraint = fast(text)
                if constraint is None:
                    constraint = matching.parse(text)
                if memoize:
                    memo[text] = constraint
            yield int(row["id"]), constraint

    frame = spark.read.parquet((directory / f"{side}.parquet").as_uri())
    return encode_rdd(spark, frame.select("id", "constraint").rdd.mapPartitions(decode))


def _materialize(encoded: Any) -> int:
    """Compute and cache every frame of ``encoded``; the number of predicate rows."""
    encoded.disjuncts.count()
    encoded.shapes.count()
    return int(encoded.predicates.count())


def spark_match_batches(
    spark: Any,
    directory: Path,
    batches: list[int],
    reference: dict[int, set[Pair]],
    budget: Budget,
    log: Any,
) -> SparkRun:
    """Time the Spark matcher on every batch; ``reference`` holds ``range``'s pairs."""
    # pyspark when called, as in matching.spark: importing this module must not load it
    from pyspark.sql import functions as F

    run = SparkRun()
    sides = {}
    try:
        for side in ("subs", "pubs"):
            started = time.perf_counter()
            sides[side] = _encoded_side(spark, directory, side)
            run.rows[side] = _materialize(sides[side])
            run.load[side] = time.perf_counter() - started
        log(
            f"  spark: decoded and encoded in {run.load['subs'] + run.load['pubs']:.1f} s "
            f"({run.rows['subs']:,} + {run.rows['pubs']:,} predicate rows)"
        )
        subs, pubs = sides["subs"], sides["pubs"]
        for b in batches:
            r = SparkBatch(b)
            run.batches.append(r)
            wanted = F.col("id") <= F.lit(b)
            batch = Encoded(
                disjuncts=pubs.disjuncts.where(wanted),
                shapes=pubs.shapes,  # shapes of other publications match nothing
                predicates=pubs.predicates.where(wanted),
            )

            def once(batch: Encoded = batch, r: SparkBatch = r, b: int = b) -> None:
                rows = match(batch, subs).collect()
                pairs = {(int(row["pub_id"]), int(row["sub_id"])) for row in rows}
                r.pairs = len(pairs)
                if pairs != reference[b]:
                    r.identical = False

            warm = 0.0
            if budget.warm:
                started = time.perf_counter()
                once()  # warm-up, untimed; its answer is checked too
                warm = time.perf_counter() - started
            r.times = repeat(once, budget, warm)
            log(
                f"    batch {b:>5}: spark median {r.times.median * 1000:9.2f} ms over "
                f"{len(r.times.seconds)} runs, {r.pairs} pairs"
                + ("" if r.identical else "  PAIRS DIFFER FROM range")
            )
    finally:
        for encoded in sides.values():
            encoded.unpersist()
    return run


def spark_budget(quick: bool) -> Budget:
    """Spark's repeats. A Spark match runs a dozen or more Spark jobs however small the
    batch (seconds each match on this busy 2-core machine), so it gets fewer repeats than
    the stores: one warm-up, then three timed runs if the warm-up took under 3 s, else one.
    A quick run times one cold run (``warm=0``: no warm-up)."""
    if quick:
        return Budget(least=1, most=1, seconds=0.0, warm=0)
    return Budget(least=3, most=5, seconds=3.0, slow=3.0, least_slow=1, warm=1)


# Encoding on the executors runs Python over every predicate row (37 s for 30,000
# large-intermediate subscriptions of 13 terms on this 2-core machine under a load of 10),
# so the million-subscription workloads (18 terms) would add far more than the rest of a
# full run takes; they run only when asked for.
DEFAULT_MAX_SUBS = 100_000


def spark_plan(step: dict[str, Any], quick: bool, max_subs: int = DEFAULT_MAX_SUBS) -> list[int]:
    """The batches of an experiment that the Spark matcher runs: all of them for workloads
    of at most ``max_subs`` subscriptions, none beyond; a quick run keeps it short with
    only Figure 6's largest batch of each kind."""
    if step["subs"] > max_subs:
        return []
    if not quick:
        return list(step.get("batches", [1]))
    return [max(step["batches"])] if step["figure"] == 6 else []
