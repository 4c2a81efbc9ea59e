"""Historic reads of the event log (SPEC 8.1, 8.3) answered in SQL, at speed.

The log's JSON line of an event (``event_row_json`` dumped compactly, which is what
``GET /api/v1/events/?format=jsonl`` has always sent) is built by PostgreSQL itself and
fetched a few thousand at a time (``_pages``): no row object, no timestamp parsing and no
JSON decoding per event in Python. The line is byte for byte the one the Python path writes:

* the envelope in its order, ``time`` as ``format_timestamp_body`` spells it (UTC, the
  microseconds only when there are some, ``Z``);
* then the attributes in the order PostgreSQL's ``jsonb`` keeps them (shorter keys first,
  then by bytes), which is also the order the Python path reads them back in. Each type's
  attributes are known (``EVENT_TYPES``), so the line asks for them by name, in that order,
  leaving out the absent ones; ``->`` gives each value's own JSON text.

What PostgreSQL cannot spell as Python's ``json.dumps`` does is handed to Python, line by
line, so the output stays exact: a row carrying a key its type does not have (SQL marks
its line with a leading space and writes the attributes in ``jsonb``'s own spelling), and
any text beyond printable ASCII (``json.dumps`` escapes it as ``\\uXXXX``, PostgreSQL
writes UTF-8). Such a line is parsed and dumped again, as the Python path would. Values
are the scalars of SPEC 8.1 (ints, and strings for decimals, timestamps and text); a
nested value would keep ``jsonb``'s spacing.

Filters that SQL applies exactly are pushed down (``HistoryWhere``): the caller's
visibility (SPEC 5.6), the ``seq`` window, the time range (so PostgreSQL prunes the other
days' partitions), event types, subject equality and patterns (a prefix test for
``a.b.>``, else ``matching.subjects``' regex, which PostgreSQL's ``~`` reads the same
way), and those of a subscription's conditions built only of such tests
(``history_pushdown``). Everything else is the evaluator's.

Reads go to the replica (``settings.HISTORY_DATABASE``) once it holds the read's end, else
to the primary (``history_source``), so a lagging replica never hides an event.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Generator, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any, NotRequired, TypedDict, Unpack

import psycopg
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import DatabaseError, connections
from psycopg import sql

from exchange.models.events import EVENT_TABLE
from matching import Interval, Type, Wildcard
from matching.subjects import ONE, REST, compile_pattern
from matching.subscriptions.language.model import Condition, SubjectTest, Test
from matching.subscriptions.language.schema import EVENT_TYPES

# Rows gathered into one part of the output: a part is a few hundred kilobytes, so a
# consumer (an HTTP response, a WebSocket replay) makes few large writes.
PART_ROWS = 2000
# How long a read waits for the replica to reach its end before reading the primary, and
# how often it looks meanwhile (``history_source``).
REPLICA_WAIT = 1.0
REPLICA_POLL = 0.01
# Lines one query reads (see ``_pages``).
PAGE_ROWS = 20_000
# The start of every line as SQL writes it (a respelled one begins with a space).
_HEAD = re.compile(r' ?\{"seq":(?P<seq>\d+),"time":"(?P<time>[^"]+)"')


def _jsonb_order(keys: Iterable[str]) -> list[str]:
    """Keys in the order ``jsonb`` stores an object's keys: shorter first, then by bytes."""
    return sorted(keys, key=lambda k: (len(k.encode()), k.encode()))


def _line_sql() -> str:
    """The SQL expression of one event's JSON line (``e`` is the event row). Names and
    keys go in as ``sql.Literal``s, quoted by psycopg; rendered once, without a
    connection, into the text the other queries embed."""
    envelope = sql.SQL(
        """'{"seq":' || e.seq || ',"time":"' """
        """|| replace(to_char(e.time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'), """
        """'.000000', '') """
        # A type is one of EVENT_TYPES' names (a check constraint), which need no escaping.
        """|| 'Z","type":"' || e.type || '","subject":' || to_json(e.subject::text)::text"""
    )
    known = sql.SQL(" ").join(
        sql.SQL("WHEN {} THEN {}::text[]").format(
            sql.Literal(spec.name), sql.Literal(list(spec.attributes))
        )
        for spec in EVENT_TYPES.values()
    )
    compact = sql.SQL(" ").join(
        sql.SQL("WHEN {} THEN concat({})").format(
            sql.Literal(spec.name),
            sql.SQL(", ").join(
                sql.SQL("{} || (e.data -> {})::text").format(
                    sql.Literal(f",{json.dumps(name)}:"), sql.Literal(name)
                )
                for name in _jsonb_order(spec.attributes)
            ),
        )
        for spec in EVENT_TYPES.values()
    )
    plain = sql.SQL("e.data - (CASE e.type {} ELSE '{{}}'::text[] END) = '{{}}'::jsonb").format(
        known
    )
    # jsonb's own text of the attributes ("k": v, ...), for Python to respell.
    spaced = sql.SQL(
        "CASE WHEN e.data = '{}'::jsonb THEN '}' ELSE ', ' || substr(e.data::text, 2) END"
    )
    line = sql.SQL(
        "CASE WHEN {plain} THEN {envelope} || CASE e.type {compact} END || '}}' "
        "ELSE ' ' || {envelope} || {spaced} END"
    ).format(plain=plain, envelope=envelope, compact=compact, spaced=spaced)
    return line.as_string(None)


LINE_SQL = _line_sql()


@dataclass(frozen=True)
class HistoryWhere:
    """The filters a historic read applies in SQL, all exactly as their Python meaning:

    ``since <= time < until``; ``types`` (any of them); ``subject``, a SPEC 8.2 pattern
    (a plain subject is a pattern of one); ``conditions``, conjuncts of a subscription
    that ``history_pushdown`` accepted, each holding for every event returned.
    """

    since: dt.datetime | None = None
    until: dt.datetime | None = None
    types: frozenset[str] | None = None
    subject: str | None = None
    conditions: tuple[Condition, ...] = ()


class _Sql:
    """A WHERE clause being built: its conjuncts and their parameters."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.params: list[Any] = []

    def add(self, part: str, *params: Any) -> None:
        self.parts.append(part)
        self.params.extend(params)


def _pattern_sql(pattern: str, params: list[Any]) -> str:
    """SQL true of exactly the log's subjects that match ``pattern``.

    ``office.supplies.>`` is a prefix test, not the regex: the log's subjects are its
    markets' subjects, which their check constraint keeps well formed, and a well formed
    subject matches such a pattern when it starts with ``office.supplies.``. Why: PostgreSQL
    runs the regex in about 3 µs a row, and while planning tries it on every partition's
    statistics (about 15 ms more a query over a month of daily partitions)."""
    compiled = compile_pattern(pattern)
    if compiled.is_literal:
        params.append(pattern)
        return "e.subject = %s"
    *head, last = compiled.tokens
    if head and last == REST and ONE not in head:
        params.append(".".join(head) + ".")
        return "starts_with(e.subject, %s)"
    params.append(compiled.regex)
    return "e.subject ~ %s"


# The envelope attributes a condition's test may name in SQL, with their column.
_COLUMNS = {"seq": "e.seq", "time": "e.time", "type": "e.type", "subject": "e.subject"}


def _pushable(test: Test) -> bool:
    if isinstance(test, SubjectTest):
        return True
    if test.attribute not in _COLUMNS:
        return False
    if isinstance(test.predicate, Wildcard):
        return True  # the envelope is always present
    if not isinstance(test.predicate, Interval):
        return False
    if test.type is Type.STRING:
        # Equality only: string order in PostgreSQL follows its collation, not Python's.
        p = test.predicate
        return p.lo is not None and p.lo == p.hi and p.lo_closed and p.hi_closed
    return test.type in (Type.INT, Type.TIMESTAMP)


def _test_sql(test: Test, params: list[Any]) -> str:
    if isinstance(test, SubjectTest):
        match = _pattern_sql(test.pattern, params)
        return f"NOT ({match})" if test.negated else match
    if isinstance(test.predicate, Wildcard):
        return "TRUE"
    column = _COLUMNS[test.attribute]
    p = test.predicate
    assert isinstance(p, Interval)
    bounds = []
    if p.lo is not None:
        bounds.append(f"{column} {'>=' if p.lo_closed else '>'} %s")
        params.append(p.lo)
    if p.hi is not None:
        bounds.append(f"{column} {'<=' if p.hi_closed else '<'} %s")
        params.append(p.hi)
    return " AND ".join(bounds) or "TRUE"


def history_pushdown(
    conditions: Sequence[Condition], *, alias: str | None = None
) -> tuple[tuple[Condition, ...], tuple[Condition, ...]]:
    """Split ``alias``'s conjuncts into those SQL applies exactly (every test of every
    disjunct on ``seq``, ``time``, ``type`` or ``subject``: subject patterns, equality of
    the strings, any range of ``seq`` and ``time``) and the rest, which stay the
    evaluator's. Conjuncts of other aliases are in neither."""
    pushed: list[Condition] = []
    rest: list[Condition] = []
    for condition in conditions:
        if condition.alias != alias:
            continue
        tests = [t for d in condition.disjuncts for t in d]
        (pushed if all(_pushable(t) for t in tests) else rest).append(condition)
    return tuple(pushed), tuple(rest)


def _where(
    *, user: User | AnonymousUser, after: int, upto: int, where: HistoryWhere
) -> tuple[str, list[Any]]:
    sql = _Sql()
    sql.add("e.seq > %s AND e.seq <= %s", after, upto)
    if not user.is_staff:
        if user.is_authenticated:
            sql.add("(e.owner_id IS NULL OR e.owner_id = %s)", user.pk)
        else:
            sql.add("e.owner_id IS NULL")
    if where.since is not None:
        sql.add("e.time >= %s", where.since)
    if where.until is not None:
        sql.add("e.time < %s", where.until)
    if where.types is not None and len(where.types) == 1:
        # Plain equality lets PostgreSQL walk the (type, seq) index in seq order.
        sql.add("e.type = %s", *where.types)
    elif where.types is not None:
        sql.add("e.type = ANY(%s)", sorted(where.types))
    if where.subject is not None:
        params: list[Any] = []
        sql.add(_pattern_sql(where.subject, params), *params)
    for condition in where.conditions:
        params = []
        disjuncts = [
            "(" + " AND ".join(_test_sql(t, params) for t in tests) + ")"
            for tests in condition.disjuncts
        ]
        sql.add("(" + " OR ".join(disjuncts) + ")", *params)
    return " AND ".join(sql.parts), sql.params


def history_sql(
    *,
    user: User | AnonymousUser,
    after: int,
    upto: int,
    where: HistoryWhere | None = None,
    limit: int | None = None,
) -> tuple[str, list[Any]]:
    """The SELECT of the JSON lines of a historic read, in ``seq`` order (the first
    ``limit`` if given), and its parameters, bound on the client: the time range reaches
    the planner as constants, which is what lets it prune partitions while planning."""
    condition, params = _where(user=user, after=after, upto=upto, where=where or HistoryWhere())
    select = f"SELECT {LINE_SQL} FROM {EVENT_TABLE} e WHERE {condition} ORDER BY e.seq"
    if limit is not None:
        select += f" LIMIT {int(limit)}"
    return select, params


def _spelled(text: str) -> bool:
    """Whether ``text`` (lines joined by newlines) is as ``json.dumps`` writes it: printable
    ASCII and no line marked by SQL."""
    return text.isascii() and "\x7f" not in text and not text.startswith(" ") and "\n " not in text


def _exact(lines: list[str]) -> list[str]:
    """``lines`` with each one PostgreSQL could not spell exactly parsed and dumped again."""
    if _spelled("\n".join(lines)):
        return lines
    return [
        line if _spelled(line) else json.dumps(json.loads(line), separators=(",", ":"))
        for line in lines
    ]


class HistoryRead(TypedDict):
    """A historic read's arguments: ``history_texts`` and the reads built on it take them
    as keywords."""

    user: User | AnonymousUser
    after: int
    upto: int
    where: NotRequired[HistoryWhere | None]
    using: NotRequired[str | None]
    limit: NotRequired[int | None]


def history_texts(**read: Unpack[HistoryRead]) -> Generator[list[str], None, None]:
    """The JSON lines of the events ``user`` may see with ``after`` < ``seq`` <= ``upto``
    that pass ``where``, in ``seq`` order, as lists of at most ``PART_ROWS`` lines (text
    without a newline): exactly what ``json.dumps(event_row_json(...), separators=(",",
    ":"))`` writes for each. Read from the database ``using`` (by default the one
    ``history_source`` picks for ``upto``) in pages of ``PAGE_ROWS`` (see ``_pages``), the
    first ``limit`` lines only if given, each part handed on as it arrives, so memory does
    not grow with the read; closing the iterator early stops the page being read. A bad
    subject pattern raises ``SubjectError`` here, before anything is read."""
    user, after, upto = read["user"], read["after"], read["upto"]
    where = read.get("where") or HistoryWhere()
    history_sql(user=user, after=after, upto=upto, where=where)  # checks the filters now
    using = read.get("using")
    if using is None:
        using = history_source(upto=upto)
    limit = read.get("limit")
    return _pages(user=user, after=after, upto=upto, where=where, using=using, limit=limit)


def history_lines(**read: Unpack[HistoryRead]) -> Generator[bytes, None, None]:
    """``history_texts``' parts as bytes, each line ending in a newline (``format=jsonl``)."""
    return _encoded(history_texts(**read))


def _encoded(texts: Generator[list[str], None, None]) -> Generator[bytes, None, None]:
    with closing(texts):  # closing this closes the read at once
        for lines in texts:
            yield ("\n".join(lines) + "\n").encode()


def _pages(
    *,
    user: User | AnonymousUser,
    after: int,
    upto: int,
    where: HistoryWhere,
    using: str,
    limit: int | None,
) -> Generator[list[str], None, None]:
    """Keyset pages by ``seq``, each a cursor over at most ``PAGE_ROWS`` lines, fetched
    ``PART_ROWS`` at a time.

    Why pages and not one statement: the limit makes PostgreSQL walk the ``seq`` indexes
    in order (a merge of the partitions' index scans), so lines flow at once and nothing
    is sorted in memory; and a short statement on a hot-standby replica is not cancelled
    by a replay conflict the way an hour-long one would be. Each page after the first
    also starts at the time of the last event read: ``time`` never decreases along
    ``seq`` (the writer's rule), so that bound drops nothing and prunes the partitions of
    the earlier days.

    Why a server-side cursor and not ``COPY ... TO STDOUT``: COPY sends each line as a
    message of its own, which psycopg passes on in Python, about 2.5 µs a line in this
    process (as much as the sends of the line take); a ``FETCH`` brings a part's lines as
    one result, made into strings in C, about 0.6 µs a line."""
    connection = connections[using]
    left = limit
    while after < upto and left != 0:
        page = PAGE_ROWS if left is None else min(PAGE_ROWS, left)
        select, params = history_sql(user=user, after=after, upto=upto, where=where, limit=page)
        connection.ensure_connection()
        raw = connection.connection
        assert raw is not None
        # Bound on the client, as Django binds: the planner sees the bounds as constants.
        query = psycopg.ClientCursor(raw).mogrify(select, params)
        count = 0
        last = ""
        # A cursor lives in a transaction (a savepoint in the caller's, if any); leaving
        # early rolls it back, which closes the cursor and stops the query.
        with raw.transaction(), raw.cursor(name="history_page") as cursor:
            cursor.execute(query)
            while rows := cursor.fetchmany(PART_ROWS):
                count += len(rows)
                last = rows[-1][0]
                yield _exact([row[0] for row in rows])
        if count < page:
            return
        if left is not None:
            left -= count
        # From the envelope SQL wrote (a stray "seq" key in the data would win in JSON).
        head = _HEAD.match(last)
        assert head is not None, last
        after = int(head["seq"])
        time = dt.datetime.fromisoformat(head["time"])
        if where.since is None or where.since < time:
            where = replace(where, since=time)


def history_end(*, using: str = "default") -> int:
    """The ``seq`` of the last event in the log on ``using`` (0 if none): every event up to
    it is committed there (``seq`` has no holes in commit order), so a read up to it is
    complete."""
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT coalesce(max(seq), 0) FROM {EVENT_TABLE}")
        row = cursor.fetchone()
    return int(row[0])


def history_source(*, upto: int, wait: float | None = None) -> str:
    """The database to read the events up to ``upto`` from: ``settings.HISTORY_DATABASE``
    (the replica) once it holds ``upto``, else ``"default"`` (the primary).

    Why comparing the replica's last ``seq`` with ``upto`` is enough: ``seq`` has no holes
    in commit order, and a hot standby applies commits in the primary's order, so a replica
    that shows event ``upto`` shows every event before it, now and later. It is given
    ``wait`` seconds (``REPLICA_WAIT``) to get there; a replica that lags more, or does not
    answer, leaves the read to the primary, which has every committed event. Either way
    nothing up to ``upto`` is missed, and a read never waits long on a replica that is
    paused or far behind.

    A failed look is tried again until the time is up, on a new connection: a hot standby
    cancels a query, or ends its session, when replaying the primary's lock on a table
    (a ``TRUNCATE``, a new partition) would otherwise wait on it (PostgreSQL's "conflict with
    recovery"), and one such cancellation says nothing of whether the replica will hold
    ``upto`` a moment later."""
    alias = settings.HISTORY_DATABASE
    if alias == "default":
        return alias
    deadline = time.monotonic() + (REPLICA_WAIT if wait is None else wait)
    while True:
        try:
            if history_end(using=alias) >= upto:
                return alias
        except DatabaseError:
            # The next look opens a new session: the failed one may have been ended.
            connections[alias].close()
        if time.monotonic() >= deadline:
            return "default"
        time.sleep(REPLICA_POLL)


def history_events(**read: Unpack[HistoryRead]) -> Generator[dict[str, Any], None, None]:
    """The events of ``history_texts`` as dicts, each as SPEC 8.1 writes it
    (``event_row_json``: the envelope, then the attributes; decimals and timestamps as
    strings), in constant memory. ``upto`` is the caller's seam: a live part takes over
    after it. Read from ``using``, by default the replica when it holds ``upto`` and the
    primary otherwise (``history_source``): nothing up to ``upto`` is missed either way."""
    return _decoded(history_texts(**read))


def _decoded(texts: Generator[list[str], None, None]) -> Generator[dict[str, Any], None, None]:
    with closing(texts):  # closing this closes the read at once, not when it is collected
        for lines in texts:
            for line in lines:
                yield json.loads(line)
