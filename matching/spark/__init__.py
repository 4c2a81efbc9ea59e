"""The Spark batch matcher (SPEC 7): SPEC 3 as DataFrame joins, on any Spark master.

No Django here. ``spark_session()`` gives the process's one SparkSession (on
``SPARK_MASTER``, default ``local[2]``); ``encode_items`` / ``encode_texts`` turn
constraints into DataFrames of rows; ``match`` returns the matching ``(pub_id, sub_id)``
pairs as a DataFrame, ``match_disjuncts`` the disjunct pairs behind them.
``match_parsed`` is what ``match_files --strategy spark`` calls. See ``docs/spark.md``.
"""

from .matcher import (
    DEFAULT_BUCKETS,
    Encoded,
    encode_items,
    encode_rdd,
    encode_texts,
    match,
    match_disjuncts,
    match_items,
    match_parsed,
)
from .session import spark_session, stop_spark_session

__all__ = [
    "DEFAULT_BUCKETS",
    "Encoded",
    "encode_items",
    "encode_rdd",
    "encode_texts",
    "match",
    "match_disjuncts",
    "match_items",
    "match_parsed",
    "spark_session",
    "stop_spark_session",
]
