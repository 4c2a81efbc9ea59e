"""ops/bench's Spark part (``ops/benchmarks/spark_matcher.py``) on a tiny workload: it
returns the pairs of the oracle, and it says so when they are not the reference's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matching.semantics import matches
from matching.workload import Workload, generate, iter_items
from ops.benchmarks.spark_matcher import spark_match_batches, spark_plan
from ops.benchmarks.timing import Budget


def test_spark_batches_are_checked_against_the_reference(spark: Any, tmp_path: Path) -> None:
    # Given a geometric workload (boxes) and the oracle's pairs for batches of 2 and 5
    directory = tmp_path / "w"
    generate(spark, Workload("geometric", 60, 5, 7), directory)
    subs = list(iter_items(directory, "subs"))
    pubs = list(iter_items(directory, "pubs"))
    truth = {(p, s) for p, pc in pubs for s, sc in subs if matches(pc, sc)}
    reference = {b: {(p, s) for p, s in truth if p <= b} for b in (2, 5)}
    reference[2] = reference[2] | {(1, 10_000)}  # a pair no matcher can find
    lines: list[str] = []

    # When the Spark part runs both batches, once each
    run = spark_match_batches(
        spark,
        directory,
        [2, 5],
        reference,
        Budget(least=1, most=1, seconds=0, warm=0),
        lines.append,
    )

    # Then batch 5 agrees, batch 2 is marked and logged as different, and the run with it
    assert [(b.batch, b.pairs, b.identical) for b in run.batches] == [
        (2, len(reference[2]) - 1, False),
        (5, len(reference[5]), True),
    ]
    assert run.identical is False
    assert run.rows == {"subs": 60, "pubs": 5}
    assert any(line.endswith("PAIRS DIFFER FROM range") for line in lines)
    assert run.as_dict()["batches"][1]["times"]["runs"] == run.batches[1].times.seconds


def test_spark_runs_every_batch_up_to_its_size_and_a_quick_run_only_the_largest() -> None:
    fig5 = {"figure": 5, "kind": "fixed", "subs": 100_000}
    fig6 = {"figure": 6, "kind": "fixed", "subs": 100_000, "batches": [1, 4, 16]}
    assert spark_plan(fig5, quick=False) == [1]
    assert spark_plan(fig6, quick=False) == [1, 4, 16]
    assert spark_plan({**fig5, "subs": 1_000_000}, quick=False) == []
    assert spark_plan({**fig5, "subs": 1_000_000}, quick=False, max_subs=1_000_000) == [1]
    assert spark_plan({**fig5, "subs": 200}, quick=True) == []
    assert spark_plan({**fig6, "subs": 200}, quick=True) == [16]
