"""``manage.py subscription_run EVENTS.jsonl "QUERY" [--now TIMESTAMP]``: SPEC 8.3's offline contract.

Prints one JSON line per notification (``{"n", "seq", "data"}``) and ``{"end": true}`` if
the subscription completes. A bad query prints ``QUERY:1:COLUMN: message`` to stderr and
exits 2; a malformed events file or ``--now`` prints ``FILE:LINE: message`` (or
``--now: message``) and exits 1. The file is checked completely before anything is
printed, so a bad line never leaves half an answer behind.

The command reads no table: it declares no system or migration checks, and the
evaluator is plain Python, so no database connection is ever opened.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Iterator
from typing import Any

from exchange.management.offline import OfflineCommand
from matching.subscriptions import (
    EventError,
    QueryError,
    event_from_dict,
    parse_query,
    parse_timestamp,
    run_offline,
)


class _BadFile(Exception):
    pass


class Command(OfflineCommand):
    help = "Run a subscription over an events file (SPEC 8.3's offline contract)."

    def add_arguments(self, parser):
        parser.add_argument("events", help="a JSON-lines file, one SPEC 8.1 event per line")
        parser.add_argument("query", help="the subscription, in SPEC 8.3's language")
        parser.add_argument(
            "--now",
            help="the registration time (default: the first event's time); earlier events are history",
        )

    def handle(self, *args, **options):
        path, text = options["events"], options["query"]
        try:
            query = parse_query(text)
        except QueryError as exc:
            self.stderr.write(f"QUERY:1:{(exc.position or 0) + 1}: {exc.message}")
            sys.exit(2)
        now: dt.datetime | None = None
        if options["now"] is not None:
            try:
                now = parse_timestamp(options["now"], "--now")
            except EventError as exc:
                self.stderr.write(f"--now: {exc.message}")
                sys.exit(1)
        try:
            first_time = _check_file(path)
        except _BadFile as exc:
            self.stderr.write(str(exc))
            sys.exit(1)
        if now is None:
            now = first_time or dt.datetime.now(dt.UTC)
        out = self.stdout
        for line in run_offline(query, _events(path), now=now):
            out.write(json.dumps(line))


def _lines(path: str) -> Iterator[tuple[int, str]]:
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                yield number, line


def _events(path: str) -> Iterator[dict[str, Any]]:
    for _, line in _lines(path):
        yield json.loads(line)


def _check_file(path: str) -> dt.datetime | None:
    """The first event's time after checking every line (``_BadFile`` at the first bad one)."""
    first: dt.datetime | None = None
    last_seq: int | None = None
    last_time: dt.datetime | None = None
    try:
        for number, line in _lines(path):
            where = f"{path}:{number}"
            try:
                event = event_from_dict(json.loads(line))
            except json.JSONDecodeError as exc:
                raise _BadFile(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
            except EventError as exc:
                raise _BadFile(f"{where}: {exc.message}") from None
            if last_seq is not None and event.seq <= last_seq:
                raise _BadFile(
                    f"{where}: seq {event.seq} does not follow {last_seq} (seq must increase)"
                )
            if last_time is not None and event.time < last_time:
                raise _BadFile(f"{where}: time goes backwards (times must not decrease)")
            if first is None:
                first = event.time
            last_seq, last_time = event.seq, event.time
    except (OSError, UnicodeDecodeError) as exc:
        raise _BadFile(f"{path}: cannot read the events file: {exc}") from None
    return first
