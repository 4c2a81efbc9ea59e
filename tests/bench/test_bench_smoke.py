"""``ops/bench --quick``: the benchmark runs end to end, so that it cannot rot.

It asserts what the run did and found, never how fast: the numbers are the benchmark's
business (``docs/benchmarks.md``), not the test's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from exchange.management.commands.match_files import database_conninfo

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench_conninfo(django_db_setup: Any, django_db_blocker: Any) -> str:
    """The run's test database on the test cluster, as a libpq conninfo string."""
    with django_db_blocker.unblock():
        return database_conninfo()


# The Spark matcher runs on one Figure 6 workload here: most of this test's time was Spark's
# fixed cost per workload (seconds per job on this machine), and the matcher's answers on
# every shape of constraint are checked against the oracle by tests/spark/test_matcher.py,
# its bench harness by tests/spark/test_bench_spark.py. Large intermediate results: the
# most predicate rows and the most disjunctions of the four.
SPARK_KIND = "large_intermediate"


@pytest.mark.timeout(1200)  # a hang guard for a loaded machine, not a speed check
def test_quick_bench_runs_and_every_matcher_agrees(tmp_path: Path, bench_conninfo: str) -> None:
    prefix = f"bench_{uuid.uuid4().hex[:10]}"
    env = {**os.environ, "BENCH_DATABASE_URL": bench_conninfo}
    done = subprocess.run(
        [
            str(ROOT / "ops" / "bench"),
            "--quick",
            "--out",
            str(tmp_path),
            "--namespace-prefix",
            prefix,
            "--spark-kinds",
            SPARK_KIND,
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    sys.stdout.write(done.stdout[-4000:])
    sys.stderr.write(done.stderr[-4000:])
    assert done.returncode == 0
    assert "identical pairs: yes" in done.stdout

    results = json.loads((tmp_path / "results.json").read_text())
    assert results["identical"] is True
    ran = [e for e in results["experiments"] if not e.get("skipped")]
    assert {(e["figure"], e["kind"]) for e in ran} == {
        (figure, kind)
        for figure in (5, 6)
        for kind in ("fixed", "proportional", "large_intermediate", "geometric")
    }
    for e in ran:
        assert set(e["loads"]) == {"paper", "range"}
        for b in e["batches"]:
            assert b["identical"] is True
            assert b["oracle"] is True  # the quick sizes are small enough for the oracle
            assert set(b["times"]) == {"paper", "range"}
        # The Spark matcher: in a quick run, Figure 6's largest batch of the kind asked for,
        # once, with range's pairs
        if e["figure"] == 5 or e["kind"] != SPARK_KIND:
            assert "spark" not in e
            continue
        spark = e["spark"]
        top = max(b["batch"] for b in e["batches"])
        assert [b["batch"] for b in spark["batches"]] == [top]
        (only,) = spark["batches"]
        assert only["identical"] is True and spark["identical"] is True
        assert only["pairs"] == next(b["pairs"] for b in e["batches"] if b["batch"] == top)
        assert len(only["times"]["runs"]) == 1
        assert spark["rows"]["subs"] >= e["subs"]

    report = (tmp_path / "benchmarks.md").read_text()
    for heading in (
        "## Targets",
        "## Correctness",
        "## Figure 4",
        "## Figure 5",
        "## Figure 6",
        "## Figure 7",
        "## The Spark batch matcher",
        "## Method",
    ):
        assert heading in report
    assert "**identical pairs**: yes" in report
    assert "**Spark matcher, same pairs as `range`**: yes" in report
    spark_rows = [line for line in report.splitlines() if line.startswith("| 6 | ")]
    assert len(spark_rows) == 2  # one kind: a timing row and a load row
    assert spark_rows[0].startswith("| 6 | large intermediate results | 200 | 16 | ")
    assert spark_rows[0].endswith("| yes |")
    assert "only the largest batch of the Figure 6 workload of large intermediate" in report
    for n in (4, 5, 6, 7):
        assert (tmp_path / "img" / f"bench-fig{n}.png").stat().st_size > 1000

    # Had the Spark matcher returned other pairs, the report says so and the run fails (the
    # report's text alone: its plots were drawn and checked above, drawing them again took
    # seconds)
    e = next(e for e in results["experiments"] if "spark" in e)
    e["spark"]["batches"][0]["identical"] = e["spark"]["identical"] = e["identical"] = False
    results["identical"] = False
    doctored = tmp_path / "doctored.json"
    doctored.write_text(json.dumps(results))
    again = subprocess.run(
        [
            str(ROOT / "ops" / "bench"),
            "--from-json",
            str(doctored),
            "--out",
            str(tmp_path / "bad"),
            "--no-plots",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert again.returncode == 1
    assert "identical pairs: NO" in again.stdout
    bad = (tmp_path / "bad" / "benchmarks.md").read_text()
    assert f"**Spark matcher, same pairs as `range`**: NO, they differ for {e['kind']} " in bad
    assert not (tmp_path / "bad" / "img").exists()

    with psycopg.connect(bench_conninfo) as conn:
        left = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", [prefix + "%"]
        ).fetchall()
    assert left == []  # every store the run made was dropped
