"""Pattern backtests on Spark (SPEC 8.3 form 3, issue 20 item 5): ``manage.py backtest``.

The events of ``[since, until)`` that the reader may see are read from PostgreSQL over JDBC
(each as its JSON line, ``selectors/history.py``'s ``LINE_SQL``, so an executor decodes
exactly what ``subscription_run`` reads), partitioned by subject, sorted by ``seq`` inside
each partition, and each subject's events are run through the one evaluator
(``run_offline``, registered at ``since``: patterns follow live events only, so every
event of the range is live to them). The outputs come back to the driver, ordered by the
event that completed them (then as the evaluator gave them) and numbered ``n`` = 1, 2, 3, ...

Why that is exact: a pattern whose every step requires the subject of the step before it
(``b.subject = a.subject`` among its condition's top-level conjuncts) only ever binds events
of one subject, so an instance sees the same events in its subject's partition as in the
whole log, and ``WITHIN`` drops it at the same point (time does not decrease, so the next
event of its own subject finds it expired too). Outputs of one event belong to that event's
subject, so their order inside a partition is their order in the whole run. The one
difference: ``state_limit`` counts the instances of one subject at a time. A pattern that
does not tie its steps to one subject is refused (``not_partitionable``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator
from itertools import groupby
from typing import Any

from matching.subscriptions import parse_query, run_offline
from matching.subscriptions.patterns.model import All, Compare, Pattern, PatternQuery, Ref

from .job import JdbcSource, jdbc_read


class NotPartitionable(ValueError):
    """The pattern cannot run partitioned by subject; the message says which step."""


def subject_tied(query: PatternQuery) -> None:
    """``NotPartitionable`` unless every ``NEXT``/``FOLD`` step of every side requires the
    subject of an alias bound before it (a top-level conjunct ``b.subject = a.subject``,
    either way round; ``b.last.subject`` counts as bound before)."""
    for number, side in enumerate(query.sides, 1):
        for step in side.steps:
            if not _ties(side, step.source.alias, step.condition):
                where = f" of UNION side {number}" if len(query.sides) > 1 else ""
                earlier = side.aliases[side.aliases.index(step.source.alias) - 1]
                raise NotPartitionable(
                    f"the {step.kind.upper()} step binding {step.source.alias!r}{where} does "
                    "not require the subject of an earlier step, so the pattern cannot run "
                    f"partitioned by subject: add {step.source.alias}.subject = "
                    f"{earlier}.subject to its condition"
                )


def _ties(side: Pattern, alias: str, condition: Any) -> bool:
    before = side.aliases[: side.aliases.index(alias)]
    parts = condition.parts if isinstance(condition, All) else (condition,)

    def own(ref: Any) -> bool:
        return (
            isinstance(ref, Ref)
            and ref.alias == alias
            and ref.attribute == "subject"
            and not ref.last
        )

    def earlier(ref: Any) -> bool:
        return (
            isinstance(ref, Ref)
            and ref.attribute == "subject"
            and (ref.alias in before or (ref.alias == alias and ref.last))
        )

    return any(
        isinstance(part, Compare)
        and part.op == "="
        and ((own(part.left) and earlier(part.right)) or (own(part.right) and earlier(part.left)))
        for part in parts
    )


def events_sql(
    *, table: str, line_sql: str, since: dt.datetime, until: dt.datetime, viewer: str
) -> str:
    """The JDBC query: subject, seq and JSON line of the events of ``[since, until)`` that
    pass ``viewer`` (an SQL condition on ``e.owner_id``)."""
    return (
        f"SELECT e.subject, e.seq, {line_sql} AS line FROM {table} e "
        f"WHERE e.time >= TIMESTAMPTZ '{since.isoformat()}' "
        f"AND e.time < TIMESTAMPTZ '{until.isoformat()}' AND {viewer}"
    )


def _partition(
    text: str, since: dt.datetime
) -> Callable[[Iterable[Any]], Iterator[tuple[int, int, str]]]:
    """What each partition runs: its rows (sorted by subject, then seq) subject by subject
    through ``run_offline``; yields ``(completing seq, rank in its subject, data JSON)``."""

    def run(rows: Iterable[Any]) -> Iterator[tuple[int, int, str]]:
        query = parse_query(text)
        for _, group in groupby(rows, key=lambda row: row["subject"]):
            events = (json.loads(row["line"]) for row in group)
            for rank, line in enumerate(run_offline(query, events, now=since)):
                if "n" in line:
                    yield line["seq"], rank, json.dumps(line["data"])

    return run


def backtest_on_spark(
    spark: Any,
    source: JdbcSource,
    *,
    text: str,
    since: dt.datetime,
    events: str,
) -> list[dict[str, Any]]:
    """The notifications of the pattern ``text`` (already checked with ``subject_tied``)
    registered at ``since`` over the events that ``events`` reads (``events_sql``), as
    ``subscription_run`` prints them (no ``end``: a pattern never completes)."""
    frame = jdbc_read(spark, source, events)
    parts = max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))
    ordered = frame.repartition(parts, "subject").sortWithinPartitions("subject", "seq")
    found = ordered.rdd.mapPartitions(_partition(text, since)).collect()
    found.sort(key=lambda item: (item[0], item[1]))
    return [
        {"n": n, "seq": seq, "data": json.loads(data)} for n, (seq, _, data) in enumerate(found, 1)
    ]
