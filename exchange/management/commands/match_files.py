"""``manage.py match_files PUBS SUBS [--strategy S] [--out FILE]``: match two files (SPEC 4).

Each file holds one constraint per line as ``<id><TAB><constraint text>``; blank lines
and lines starting with ``#`` are skipped. Every line is parsed before anything is
matched: if any line is bad, each bad line is reported on stderr as
``FILE:LINE:COLUMN: message`` (both 1-based, the column counted in characters of
the whole line), no pair is printed and the exit status is 2.

Otherwise the constraints go into a scratch store, in a PostgreSQL schema of its
own named ``scratch_<pid>_<random>`` that is dropped afterwards, so the command
never reads or writes the exchange's data and may run beside the application. The
matching pairs are printed as ``<pub id><TAB><sub id>``, sorted by publication id
and then subscription id, both compared as text.

Strategies are the keys of ``MATCHERS``; another one (Spark, say) is added by
registering a function from the two parsed files to the set of matching pairs.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections
from psycopg.conninfo import make_conninfo

import matching
import matching.spark
from exchange.management.offline import OfflineCommand
from matching.model import Constraint
from matching.store import StoreLimitError, check_storable, open_store
from matching.store.memory import MemoryStore

Parsed = list[tuple[str, Constraint]]
"""A file's constraints with their ids as written, in file order."""

Matcher = Callable[[Parsed, Parsed], set[tuple[str, str]]]

# Keys of DATABASES[...]["OPTIONS"] that are Django's, not libpq's.
_DJANGO_OPTIONS = {
    "assume_role",
    "context",
    "cursor_factory",
    "isolation_level",
    "pool",
    "prepare_threshold",
    "server_side_binding",
}


def database_conninfo() -> str:
    """A libpq conninfo for Django's default database (the test database under pytest)."""
    settings_dict = connections["default"].settings_dict
    params: dict[str, Any] = {
        "dbname": settings_dict["NAME"],
        "user": settings_dict["USER"],
        "password": settings_dict["PASSWORD"],
        "host": settings_dict["HOST"],
        "port": settings_dict["PORT"],
    }
    for key, value in (settings_dict.get("OPTIONS") or {}).items():
        if key not in _DJANGO_OPTIONS and isinstance(value, str | int):
            params[key] = value
    return make_conninfo(**{k: str(v) for k, v in params.items() if v not in (None, "")})


def scratch_namespace() -> str:
    return f"scratch_{os.getpid()}_{secrets.token_hex(4)}"


def _numbered(parsed: Parsed) -> tuple[list[tuple[int, Constraint]], list[str]]:
    """The constraints under ids 0, 1, ... (what a store takes) and the text id of each."""
    return [(n, c) for n, (_, c) in enumerate(parsed)], [text_id for text_id, _ in parsed]


def database_matcher(strategy: str) -> Matcher:
    """Match in a scratch store of a PostgreSQL strategy, dropped whatever happens."""

    def match(pubs: Parsed, subs: Parsed) -> set[tuple[str, str]]:
        pub_items, pub_ids = _numbered(pubs)
        sub_items, sub_ids = _numbered(subs)
        with psycopg.connect(database_conninfo(), autocommit=True) as conn:
            store = open_store(conn, strategy=strategy, namespace=scratch_namespace())
            try:
                store.create()
                store.bulk_load(publications=pub_items, subscriptions=sub_items)
                pairs = store.match_all()
            finally:
                store.drop()
        return {(pub_ids[p], sub_ids[s]) for p, s in pairs}

    return match


def memory_matcher(pubs: Parsed, subs: Parsed) -> set[tuple[str, str]]:
    """The oracle of SPEC 3 over every pair; no database."""
    pub_items, pub_ids = _numbered(pubs)
    sub_items, sub_ids = _numbered(subs)
    store = MemoryStore()
    store.add_publications(pub_items)
    store.add_subscriptions(sub_items)
    return {(pub_ids[p], sub_ids[s]) for p, s in store.match_all()}


def spark_matcher(pubs: Parsed, subs: Parsed) -> set[tuple[str, str]]:
    """The Spark batch matcher (SPEC 7) on ``SPARK_MASTER``; no database."""
    return matching.spark.match_parsed(pubs, subs, master=settings.SPARK_MASTER)


MATCHERS: dict[str, Matcher] = {
    "paper": database_matcher("paper"),
    "range": database_matcher("range"),
    "memory": memory_matcher,
    "spark": spark_matcher,
}

# Strategies whose constraints must also fit the PostgreSQL store's index limits.
STORED = {"paper", "range"}


@dataclass(frozen=True)
class BadLine:
    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


def read_constraints(
    path: str, *, check: Callable[[Constraint], None] | None = None
) -> tuple[Parsed, list[BadLine]]:
    """Parse a ``<id><TAB><constraint>`` file; returns the constraints and the bad lines."""
    parsed: Parsed = []
    bad: list[BadLine] = []
    first_seen: dict[str, int] = {}
    for number, raw in enumerate(Path(path).read_bytes().split(b"\n"), start=1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            column = len(raw[: exc.start].decode("utf-8", errors="replace")) + 1
            bad.append(BadLine(path, number, column, "the line is not valid UTF-8"))
            continue
        if number == 1:
            line = line.removeprefix("\ufeff")
        if not line.strip() or line.startswith("#"):
            continue
        text_id, tab, text = line.partition("\t")
        if not tab:
            bad.append(BadLine(path, number, 1, "expected <id><TAB><constraint>: no TAB found"))
            continue
        if not text_id:
            bad.append(BadLine(path, number, 1, "the id before the TAB is empty"))
            continue
        if text_id in first_seen:
            bad.append(
                BadLine(
                    path,
                    number,
                    1,
                    f"the id {text_id!r} is already used on line {first_seen[text_id]}",
                )
            )
            continue
        first_seen[text_id] = number
        offset = len(text_id) + 1  # the constraint text starts after the id and the TAB
        try:
            constraint = matching.parse(text)
            if check is not None:
                check(constraint)
        except matching.ConstraintError as exc:
            column = offset + (exc.position or 0) + 1
            bad.append(BadLine(path, number, column, exc.message))
            continue
        except StoreLimitError as exc:
            bad.append(BadLine(path, number, offset + 1, str(exc)))
            continue
        parsed.append((text_id, constraint))
    return parsed, bad


class Command(OfflineCommand):
    help = (
        "Match the constraints of two files (<id><TAB><constraint> per line) and print "
        "the matching pairs as <pub id><TAB><sub id>, sorted as text."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("pubs", help="the publications file")
        parser.add_argument("subs", help="the subscriptions file")
        parser.add_argument("--strategy", choices=sorted(MATCHERS), default="range")
        parser.add_argument("--out", help="write the pairs to this file instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        strategy = options["strategy"]
        check = check_storable if strategy in STORED else None
        files = []
        bad: list[BadLine] = []
        for path in (options["pubs"], options["subs"]):
            try:
                parsed, problems = read_constraints(path, check=check)
            except OSError as exc:
                self.stderr.write(f"{path}: cannot read the file: {exc.strerror or exc}")
                sys.exit(2)
            files.append(parsed)
            bad.extend(problems)
        if bad:
            for problem in bad:
                self.stderr.write(str(problem))
            sys.exit(2)
        pairs = sorted(MATCHERS[strategy](files[0], files[1]))
        lines = "".join(f"{p}\t{s}\n" for p, s in pairs)
        if options["out"]:
            with open(options["out"], "w", encoding="utf-8", newline="\n") as out:
                out.write(lines)
        elif lines:
            self.stdout.write(lines, ending="")
