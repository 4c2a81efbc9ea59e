"""Generating a workload with Spark: Parquet and the ``match_files`` text, reproducibly.

Every random value is a hash of (seed, side, id, term) (Spark's ``xxhash64``), never a
draw from a generator: a row's values do not depend on which partition, executor or
master computed it, so the same seed gives the same rows on any Spark master. The
numbers of partitions depend only on the sizes, and the part files are renamed to
``part-NNNNN.parquet`` (Spark names them after a random job id), so that the same seed
gives byte-identical files.

A workload directory holds::

    manifest.json               kind, sizes, seed, derived parameters, files, counts
    pubs.txt, subs.txt          <id><TAB><constraint>, a '#' comment line first (match_files)
    pubs.parquet/, subs.parquet/    id, constraint (the same text) and the drawn values

On a Spark cluster (``SPARK_MASTER`` not local) the directory must be on a file system
that the executors and the driver share: the executors write the parts, the driver
renames and concatenates them.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .parameters import (
    EPSILON_UNITS,
    GRID,
    GRID_DIGITS,
    Workload,
    fixed_top,
    proportional_top,
    terms,
    width_units,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

SIDES = ("pubs", "subs")
MANIFEST = "manifest.json"
FORMAT_VERSION = 1

# Rows per partition: enough to keep each task busy, few enough files for small runs.
ROWS_PER_PARTITION = 250_000
MAX_PARTITIONS = 16


class WorkloadError(Exception):
    """A workload directory that cannot be written or read as asked."""


@dataclass
class Generated:
    """What ``generate`` wrote, with the seconds each side's Spark jobs took."""

    directory: Path
    workload: Workload
    seconds: dict[str, float] = field(default_factory=dict)


def partitions(rows: int) -> int:
    return max(1, min(MAX_PARTITIONS, -(-rows // ROWS_PER_PARTITION)))


def _hash(w: Workload, side: str, term: int | Column) -> Column:
    """A 64-bit hash of (seed, kind, side, id, term): the row's random draw ``term``."""
    # pyspark when called: reading and loading a workload start no JVM (package docstring).
    from pyspark.sql import functions as F

    term_col = F.lit(term) if isinstance(term, int) else term
    return F.xxhash64(F.lit(w.seed), F.lit(w.kind), F.lit(side), F.col("id"), term_col)


def _uniform(w: Workload, side: str, term: int, low: int, high: int) -> Column:
    """An integer uniform in ``low .. high`` (the modulo bias is below 2**-30)."""
    # pyspark when called: reading and loading a workload start no JVM (package docstring).
    from pyspark.sql import functions as F

    return F.pmod(_hash(w, side, term), F.lit(high - low + 1)) + F.lit(low)


def _decimal(units: Column) -> Column:
    """``units/GRID`` as an exact decimal text (``0.000012345``)."""
    # pyspark when called: reading and loading a workload start no JVM (package docstring).
    from pyspark.sql import functions as F

    whole = F.floor(units / F.lit(GRID)).cast("long").cast("string")
    fraction = F.lpad(F.pmod(units, F.lit(GRID)).cast("string"), GRID_DIGITS, "0")
    return F.concat(whole, F.lit("."), fraction)


def _frame(spark: SparkSession, w: Workload, side: str) -> DataFrame:
    """The rows of one side: ``id``, ``constraint`` and the kind's drawn values."""
    # pyspark when called: reading and loading a workload start no JVM (package docstring).
    from pyspark.sql import functions as F

    rows = w.pubs if side == "pubs" else w.subs
    tag = side[:3]  # "pub" / "sub": the two sides draw different values
    ids = spark.range(1, rows + 1, 1, partitions(rows))
    if w.kind in ("fixed", "proportional"):
        top = fixed_top(w.subs, w.pubs) if w.kind == "fixed" else proportional_top(w.pubs)
        df = ids.withColumn("x", _uniform(w, tag, 1, 1, top))
        text = F.concat(F.lit("int x = "), F.col("x").cast("string"))
        return df.select("id", text.alias("constraint"), "x")
    if w.kind == "large_intermediate":
        n = terms(w.subs, w.pubs)
        draws = F.transform(
            F.sequence(F.lit(1), F.lit(n)),
            lambda k: F.pmod(_hash(w, tag, k), F.lit(2)).cast("int"),
        )
        df = ids.withColumn("r", draws)
        text = F.concat_ws(
            " AND ",
            F.transform(
                F.col("r"),
                lambda v, i: F.concat(
                    F.lit("int x"), (i + 1).cast("string"), F.lit(" = "), v.cast("string")
                ),
            ),
        )
        return df.select("id", text.alias("constraint"), "r")
    # geometric: corners in grid steps, then as doubles and as exact decimals
    if side == "subs":
        size, op = EPSILON_UNITS, "OVERLAPS"
    else:
        size, op = width_units(w.subs, w.pubs), "="
    df = ids.withColumn("ux", _uniform(w, tag, 1, 0, GRID - size)).withColumn(
        "uy", _uniform(w, tag, 2, 0, GRID - size)
    )
    corners = {
        "x1": F.col("ux"),
        "y1": F.col("uy"),
        "x2": F.col("ux") + F.lit(size),
        "y2": F.col("uy") + F.lit(size),
    }
    text = F.concat(
        F.lit(f"box b {op} BOX("),
        F.concat_ws(", ", *[_decimal(c) for c in corners.values()]),
        F.lit(")"),
    )
    values = [(c / F.lit(float(GRID))).alias(name) for name, c in corners.items()]
    return df.select("id", text.alias("constraint"), *values)


def _header(w: Workload, side: str) -> str:
    params = " ".join(f"{k}={v}" for k, v in w.parameters().items())
    return (
        f"# intersect workload {w.kind} ({side}): subs={w.subs} pubs={w.pubs} seed={w.seed}"
        f" {params}\n"
    )


def _parts(directory: Path, suffix: str) -> list[Path]:
    return sorted(
        p for p in directory.iterdir() if p.name.startswith("part-") and p.suffix == suffix
    )


def _write_side(spark: SparkSession, w: Workload, side: str, out: Path) -> None:
    df = _frame(spark, w, side)
    staging = out / f".staging-{side}"
    shutil.rmtree(staging, ignore_errors=True)
    parquet_tmp, text_tmp = staging / "parquet", staging / "text"
    df.write.option("compression", "snappy").parquet(parquet_tmp.as_uri())
    df.select(_line()).write.text(text_tmp.as_uri())

    parquet_dir = out / f"{side}.parquet"
    shutil.rmtree(parquet_dir, ignore_errors=True)
    parquet_dir.mkdir()
    for number, part in enumerate(_parts(parquet_tmp, ".parquet")):
        part.rename(parquet_dir / f"part-{number:05d}.parquet")
    with open(out / f"{side}.txt", "wb") as target:
        target.write(_header(w, side).encode())
        for part in _parts(text_tmp, ".txt"):
            with open(part, "rb") as source:
                shutil.copyfileobj(source, target, 1 << 20)
    shutil.rmtree(staging)


def _line() -> Column:
    """``<id><TAB><constraint>``, one line of the text file."""
    # pyspark when called: reading and loading a workload start no JVM (package docstring).
    from pyspark.sql import functions as F

    return F.concat(F.col("id").cast("string"), F.lit("\t"), F.col("constraint")).alias("value")


def prepare_directory(out: Path) -> None:
    """Create ``out``, or accept it if empty or holding a previous workload (replaced)."""
    if out.exists():
        if not out.is_dir():
            raise WorkloadError(f"{out} exists and is not a directory")
        ours = {MANIFEST, "pubs.txt", "subs.txt", "pubs.parquet", "subs.parquet"}
        others = [
            p.name
            for p in out.iterdir()
            if p.name not in ours and not p.name.startswith(".staging-")
        ]
        if others:
            raise WorkloadError(
                f"{out} holds other files ({', '.join(sorted(others)[:3])}...): "
                "give an empty or new directory"
            )
        (out / MANIFEST).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)


def generate(spark: SparkSession, w: Workload, out: Path | str) -> Generated:
    """Write workload ``w`` into the directory ``out`` (see the module docstring)."""
    out = Path(out).resolve()
    prepare_directory(out)
    result = Generated(out, w)
    for side in SIDES:
        started = time.perf_counter()
        _write_side(spark, w, side, out)
        result.seconds[side] = time.perf_counter() - started
    manifest: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "workload": w.as_dict(),
        "files": {
            side: {"text": f"{side}.txt", "parquet": f"{side}.parquet", "rows": rows}
            for side, rows in (("pubs", w.pubs), ("subs", w.subs))
        },
    }
    # Written last: a directory with a manifest is a complete workload.
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return result
