"""The Spark batch matcher: SPEC 3 as DataFrame joins (SPEC 7).

Publication disjunct ``dp`` matches subscription disjunct ``ds`` iff every field of ``dp``
is a field of ``ds`` and each field f of ``dp`` is

* *covered*: f is a wildcard in ``dp`` or in ``ds``, or loose (box ``OVERLAPS``/``CONTAINS``)
  in both, which always intersect; or
* *hit*: the two predicates on f intersect (both non-wildcard, not both loose).

This is the range strategy's counting rule. Covered fields are a property of the two
disjuncts' *shapes* (their field keys by role, see ``encode``), of which there are few; hits
come from one join of the predicate rows. Matches come from two disjoint sources:

(a) pairs with at least one hit: the hits are counted per disjunct pair and kept when the
    count equals the hits the pair's shapes require (the fields of ``dp`` that are not
    covered), and every field of ``dp`` is in ``ds``;
(b) pairs with no hit: decided between shapes alone (every tight field of ``dp`` a wildcard
    of ``ds``, every loose one a wildcard or loose in ``ds``, every wildcard one present in
    ``ds``), then expanded to the disjuncts of the qualifying shapes, so every row the
    expansion makes is a match.

So wildcards and loose-loose box pairs never become rows that join with everything: a
wildcard has no predicate row, and loose-loose pairs are excluded from the hit join.

The hit join is an equi-join on ``(field, bucket)`` plus the exact intersection test. Per
field, the ordered keys are cut into at most ``buckets`` ranges at quantiles of a sample of
the bounds; a predicate is copied into every bucket its interval (for points and boxes:
the x1 side of its region) reaches, and a pair is kept only in the bucket holding the
larger of the two lower bounds, which both copies reach when they intersect. Buckets only
spread the work; the answer does not depend on them (``buckets=1`` turns them off, the
default ``None`` uses them only for inputs large enough to gain from them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from matching.model import Constraint

from . import encode as enc
from .session import spark_session

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import Column, DataFrame, SparkSession

DEFAULT_BUCKETS = 16
# With ``buckets=None``, inputs with fewer bound keys than this are not bucketed: a small
# join is cheaper than choosing the boundaries.
MIN_KEYS_TO_BUCKET = 20_000
# Sampled bound keys per bucket when choosing bucket boundaries.
SAMPLE_PER_BUCKET = 64
SAMPLE_SEED = 20260101

Item = tuple[int, Constraint]


@dataclass(frozen=True)
class Encoded:
    """One side (publications or subscriptions) as DataFrames of rows (see ``encode``).

    ``disjuncts``: ``id, dj, shape``; ``shapes``: ``shape, fields, wild, loose, tight``
    (one row per distinct shape); ``predicates``: ``encode.PREDICATE_COLUMNS``.
    """

    disjuncts: DataFrame
    shapes: DataFrame
    predicates: DataFrame
    rows: RDD[Any] | None = None  # the cached rows behind the frames

    def unpersist(self) -> None:
        """Free what is cached (the frames are recomputed if used again)."""
        for frame in (self.disjuncts, self.shapes, self.predicates):
            frame.unpersist()
        if self.rows is not None:
            self.rows.unpersist()


def _schemas() -> dict[str, Any]:
    # pyspark when called: importing matching.spark must not load it (a quarter second).
    from pyspark.sql import types as T

    predicate_fields = [
        T.StructField("id", T.LongType(), False),
        T.StructField("dj", T.IntegerType(), False),
        T.StructField("shape", T.StringType(), False),
        T.StructField("field", T.StringType(), False),
        T.StructField("lo", T.BinaryType(), True),
        T.StructField("lo_closed", T.BooleanType(), False),
        T.StructField("hi", T.BinaryType(), True),
        T.StructField("hi_closed", T.BooleanType(), False),
        T.StructField("loose", T.BooleanType(), False),
    ] + [T.StructField(f"g{k}", T.DoubleType(), True) for k in range(8)]
    names = T.ArrayType(T.StringType(), False)
    return {
        "d": T.StructType(
            [
                T.StructField("id", T.LongType(), False),
                T.StructField("dj", T.IntegerType(), False),
                T.StructField("shape", T.StringType(), False),
            ]
        ),
        "s": T.StructType(
            [
                T.StructField("shape", T.StringType(), False),
                T.StructField("fields", names, False),
                T.StructField("wild", names, False),
                T.StructField("loose", names, False),
                T.StructField("tight", names, False),
            ]
        ),
        "p": T.StructType(predicate_fields),
    }


def encode_rdd(spark: SparkSession, items: RDD[Item]) -> Encoded:
    """Encode an RDD of ``(id, Constraint)`` on the executors."""
    schemas = _schemas()
    tagged = items.flatMap(enc.encode).cache()

    def part(tag: str) -> DataFrame:
        rows = tagged.filter(lambda row: row[0] == tag).map(lambda row: row[1])
        return spark.createDataFrame(rows, schemas[tag])

    # The frames are cached in the JVM: the matcher reads each of them several times, and
    # every read of an uncached one would run Python over its rows again.
    return Encoded(
        disjuncts=part("d").cache(),
        shapes=part("s").dropDuplicates(["shape"]).cache(),
        predicates=part("p").cache(),
        rows=tagged,
    )


def encode_items(spark: SparkSession, items: Iterable[Item]) -> Encoded:
    """Encode ``(id, Constraint)`` pairs held by the driver.

    The rows are made on the driver and handed to the JVM as they are (see
    ``_local_frame``); for constraints that are not on the driver, see ``encode_texts``.
    """
    schemas = _schemas()
    rows: dict[str, list[tuple[Any, ...]]] = {"d": [], "s": [], "p": []}
    shapes_seen: set[str] = set()
    for item in items:
        for tag, row in enc.encode(item):
            if tag == "s":
                if row[0] in shapes_seen:
                    continue
                shapes_seen.add(row[0])
            rows[tag].append(row)
    return Encoded(
        disjuncts=_local_frame(spark, rows["d"], schemas["d"]),
        shapes=_local_frame(spark, rows["s"], schemas["s"]),
        predicates=_local_frame(spark, rows["p"], schemas["p"]),
    )


def _local_frame(spark: SparkSession, rows: list[tuple[Any, ...]], schema: Any) -> DataFrame:
    """A DataFrame of rows held by the driver, read by the JVM alone.

    ``createDataFrame`` on a list re-pickles the rows in a Python worker every time the
    frame is read (its RDD's serializer is not the one the JVM side expects), and starting
    Python workers is most of the cost of matching a small batch. The rows are pickled
    once here and unpickled by the JVM (``SerDeUtil.pythonToJava``, which takes the batched
    format too), as ``createDataFrame`` itself does after that step. Where these
    internals are missing (Spark Connect) it falls back to ``createDataFrame``.
    """
    # pyspark when called: importing matching.spark must not load it (a quarter second).
    from py4j.protocol import Py4JError
    from pyspark.sql import DataFrame

    sc = spark.sparkContext
    try:
        jvm: Any = sc._jvm
        internal = [schema.toInternal(row) for row in rows]
        rdd = sc.parallelize(internal)
        jrdd = jvm.SerDeUtil.toJavaArray(jvm.SerDeUtil.pythonToJava(rdd._jrdd, True))
        jdf = spark._jsparkSession.applySchemaToPythonRDD(jrdd.rdd(), schema.json())
    except (AttributeError, Py4JError):
        return spark.createDataFrame(rows, schema, verifySchema=False)
    return DataFrame(jdf, spark)


def encode_texts(frame: DataFrame, *, id_col: str = "id", text_col: str = "constraint") -> Encoded:
    """Encode a DataFrame of ``(id: long, constraint text)``; the executors parse the texts.

    A text that does not parse fails the job with its ``ConstraintError``: check the input
    first (``match_files`` does) when it may be bad.
    """

    def parse(row: Any) -> Item:
        # Imported where the closure runs, in a Spark executor (cloudpickle ships it by value).
        from matching.api import parse as parse_text

        return int(row[id_col]), parse_text(row[text_col])

    return encode_rdd(frame.sparkSession, frame.select(id_col, text_col).rdd.map(parse))


# -- matching ---------------------------------------------------------------------------------


def _subset(a: Column, b: Column) -> Column:
    # pyspark when called: importing matching.spark must not load it (a quarter second).
    from pyspark.sql import functions as F

    return F.size(F.array_except(a, b)) == 0


def _bucketed(preds: DataFrame, bounds: DataFrame | None) -> DataFrame:
    """Each predicate row once per bucket its x-range reaches, with ``blo`` (its first bucket)."""
    # pyspark when called: importing matching.spark must not load it (a quarter second).
    from pyspark.sql import functions as F

    if bounds is None:
        return preds.withColumn("blo", F.lit(0)).withColumn("bucket", F.lit(0))
    with_bounds = preds.join(F.broadcast(bounds), "field", "left")
    b = F.coalesce(F.col("bounds"), F.array().cast("array<binary>"))

    def bucket_of(key: str) -> Column:
        return F.size(F.filter(b, lambda bound: bound <= F.col(key)))

    blo = F.when(F.col("lo").isNull(), F.lit(0)).otherwise(bucket_of("lo"))
    bhi = F.when(F.col("hi").isNull(), F.size(b)).otherwise(bucket_of("hi"))
    return (
        with_bounds.withColumn("blo", blo)
        .withColumn("bucket", F.explode(F.sequence(F.col("blo"), bhi)))
        .drop("bounds")
    )


def _bounds(pubs: DataFrame, subs: DataFrame, buckets: int | None) -> DataFrame | None:
    """Per field, up to ``buckets - 1`` increasing boundary keys: quantiles of a sample.

    ``None`` when there is nothing to bucket; ``buckets=None`` chooses ``DEFAULT_BUCKETS``
    or, for small inputs, none.
    """
    # pyspark when called: importing matching.spark must not load it (a quarter second).
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if buckets is not None and buckets <= 1:
        return None
    keys = None
    for side in (pubs, subs):
        for column in ("lo", "hi"):
            part = side.where(F.col(column).isNotNull()).select("field", F.col(column).alias("key"))
            keys = part if keys is None else keys.unionByName(part)
    assert keys is not None
    counts = {row["field"]: row["count"] for row in keys.groupBy("field").count().collect()}
    if buckets is None:
        if sum(counts.values()) < MIN_KEYS_TO_BUCKET:
            return None
        buckets = DEFAULT_BUCKETS
    if not counts:
        return None
    fractions = {f: min(1.0, SAMPLE_PER_BUCKET * buckets / n) for f, n in counts.items()}
    sample = keys.sampleBy("field", fractions, seed=SAMPLE_SEED)
    ordered = Window.partitionBy("field").orderBy("key")
    ranked = sample.withColumn("rn", F.row_number().over(ordered)).withColumn(
        "n", F.count(F.lit(1)).over(Window.partitionBy("field"))
    )
    # Row rn is a boundary when it starts a new ntile (but not the first one).
    first_of_tile = F.floor((F.col("rn") - 1) * buckets / F.col("n")) > F.floor(
        (F.col("rn") - 2) * buckets / F.col("n")
    )
    return (
        ranked.where((F.col("rn") > 1) & first_of_tile)
        .groupBy("field")
        .agg(F.array_distinct(F.array_sort(F.collect_list("key"))).alias("bounds"))
    )


def _intersect(p: str, s: str) -> Column:
    """The exact SPEC 3.2 test between predicate rows aliased ``p`` and ``s`` (one field)."""
    # pyspark when called: importing matching.spark must not load it (a quarter second).
    from pyspark.sql import functions as F

    def c(alias: str, name: str) -> Column:
        return F.col(f"{alias}.{name}")

    # Interval overlap, as matching.intervals.overlaps (None bounds are unbounded).
    p_not_after = (
        c(p, "lo").isNull()
        | c(s, "hi").isNull()
        | (c(p, "lo") < c(s, "hi"))
        | ((c(p, "lo") == c(s, "hi")) & c(p, "lo_closed") & c(s, "hi_closed"))
    )
    s_not_after = (
        c(s, "lo").isNull()
        | c(p, "hi").isNull()
        | (c(s, "lo") < c(p, "hi"))
        | ((c(s, "lo") == c(p, "hi")) & c(s, "lo_closed") & c(p, "hi_closed"))
    )
    # Regions of box space: overlap in each of the four dimensions ...
    region = None
    for k in range(4):
        lo, hi = f"g{k}", f"g{k + 4}"
        dim = (c(p, lo) <= c(s, hi)) & (c(s, lo) <= c(p, hi))
        region = dim if region is None else region & dim
    assert region is not None
    # ... and the overlap holds a box with x1 <= x2 and y1 <= y2.
    valid = (F.greatest(c(p, "g0"), c(s, "g0")) <= F.least(c(p, "g6"), c(s, "g6"))) & (
        F.greatest(c(p, "g1"), c(s, "g1")) <= F.least(c(p, "g7"), c(s, "g7"))
    )
    geometric = F.when(c(p, "g0").isNull(), F.lit(True)).otherwise(region & valid)
    return p_not_after & s_not_after & geometric & ~(c(p, "loose") & c(s, "loose"))


def match_disjuncts(pubs: Encoded, subs: Encoded, *, buckets: int | None = None) -> DataFrame:
    """Every matching disjunct pair: ``pub_id, pub_dj, sub_id, sub_dj`` (each once)."""
    # pyspark when called: importing matching.spark must not load it (a quarter second).
    from pyspark.sql import functions as F

    bounds = _bounds(pubs.predicates, subs.predicates, buckets)
    p = _bucketed(pubs.predicates, bounds).alias("p")
    s = _bucketed(subs.predicates, bounds).alias("s")
    hits = p.join(
        s,
        (F.col("p.field") == F.col("s.field"))
        & (F.col("p.bucket") == F.col("s.bucket"))
        & (F.col("p.bucket") == F.greatest(F.col("p.blo"), F.col("s.blo")))
        & _intersect("p", "s"),
    ).select(
        F.col("p.id").alias("pub_id"),
        F.col("p.dj").alias("pub_dj"),
        F.col("p.shape").alias("pub_shape"),
        F.col("s.id").alias("sub_id"),
        F.col("s.dj").alias("sub_dj"),
        F.col("s.shape").alias("sub_shape"),
    )
    counted = hits.groupBy("pub_id", "pub_dj", "pub_shape", "sub_id", "sub_dj", "sub_shape").agg(
        F.count(F.lit(1)).alias("hits")
    )

    ps = pubs.shapes.select(
        F.col("shape").alias("pub_shape"),
        F.col("fields").alias("p_fields"),
        F.col("wild").alias("p_wild"),
        F.col("loose").alias("p_loose"),
        F.col("tight").alias("p_tight"),
    )
    ss = subs.shapes.select(
        F.col("shape").alias("sub_shape"),
        F.col("fields").alias("s_fields"),
        F.col("wild").alias("s_wild"),
        F.col("loose").alias("s_loose"),
    )

    # (a) The hits a shape pair needs: the fields of dp that are neither a wildcard on
    # either side nor loose on both. Only for the shape pairs that have candidates.
    def needs_hit(f: Column) -> Column:
        return ~(
            F.array_contains(F.col("p_wild"), f)
            | F.array_contains(F.col("s_wild"), f)
            | (F.array_contains(F.col("p_loose"), f) & F.array_contains(F.col("s_loose"), f))
        )

    needed = (
        counted.select("pub_shape", "sub_shape")
        .distinct()
        .join(ps, "pub_shape")
        .join(ss, "sub_shape")
        .where(_subset(F.col("p_fields"), F.col("s_fields")))
        .select("pub_shape", "sub_shape", F.size(F.filter("p_fields", needs_hit)).alias("need"))
    )
    with_hits = (
        counted.join(needed, ["pub_shape", "sub_shape"])
        .where(F.col("hits") == F.col("need"))
        .select("pub_id", "pub_dj", "sub_id", "sub_dj")
    )

    # (b) Shape pairs that match with no hit at all, then their disjuncts.
    covered = (
        ps.crossJoin(ss)
        .where(
            _subset(F.col("p_tight"), F.col("s_wild"))
            & _subset(F.col("p_wild"), F.col("s_fields"))
            & _subset(F.col("p_loose"), F.concat(F.col("s_wild"), F.col("s_loose")))
        )
        .select("pub_shape", "sub_shape")
    )
    pm = pubs.disjuncts.select(
        F.col("id").alias("pub_id"), F.col("dj").alias("pub_dj"), F.col("shape").alias("pub_shape")
    )
    sm = subs.disjuncts.select(
        F.col("id").alias("sub_id"), F.col("dj").alias("sub_dj"), F.col("shape").alias("sub_shape")
    )
    without_hits = (
        covered.join(pm, "pub_shape")
        .join(sm, "sub_shape")
        .select("pub_id", "pub_dj", "sub_id", "sub_dj")
    )
    return with_hits.unionByName(without_hits)


def match(pubs: Encoded, subs: Encoded, *, buckets: int | None = None) -> DataFrame:
    """The matching ``(pub_id, sub_id)`` pairs, each once (SPEC 3.1)."""
    return match_disjuncts(pubs, subs, buckets=buckets).select("pub_id", "sub_id").distinct()


def match_items(
    spark: SparkSession,
    pubs: Iterable[Item],
    subs: Iterable[Item],
    *,
    buckets: int | None = None,
) -> set[tuple[int, int]]:
    """Match constraints held by the driver; the pairs come back to the driver."""
    encoded = encode_items(spark, pubs), encode_items(spark, subs)
    try:
        rows = match(*encoded, buckets=buckets).collect()
    finally:
        for side in encoded:
            side.unpersist()
    return {(row["pub_id"], row["sub_id"]) for row in rows}


def match_parsed(
    pubs: list[tuple[str, Constraint]],
    subs: list[tuple[str, Constraint]],
    *,
    master: str | None = None,
    buckets: int | None = None,
) -> set[tuple[str, str]]:
    """``match_files --strategy spark``: constraints under text ids, on ``master``."""
    spark = spark_session(master)
    pairs = match_items(
        spark,
        [(n, c) for n, (_, c) in enumerate(pubs)],
        [(n, c) for n, (_, c) in enumerate(subs)],
        buckets=buckets,
    )
    return {(pubs[p][0], subs[s][0]) for p, s in pairs}
