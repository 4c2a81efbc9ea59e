"""``manage.py adapter_import --market SUBJECT --side offer|bid --user USERNAME [--map MAP.json] FILE``
(SPEC 8.2): import a legacy feed's rows as the user's offers or bids.

Each row's outcome goes to stdout (``FILE:ROW: created offer 41``); a failed row goes to
stderr as ``FILE:ROW:COLUMN: message`` and creates nothing, the others go in. Exit status 2
if any row failed, 0 otherwise. A bad map, an unknown market or user, or a file that cannot
be read as a whole is one line on stderr and exit 2, with nothing created.
"""

from __future__ import annotations

import sys
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from exchange.adapters.feeds import FeedError, feed_rows
from exchange.adapters.imports import feed_import
from exchange.adapters.maps import MapError, map_default, map_load
from exchange.selectors.lookups import market_by_subject
from exchange.selectors.markets import market_schema

# The format a file is read in when the map does not say.
_FORMATS_BY_SUFFIX = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


class _Refused(Exception):
    pass


class Command(BaseCommand):
    help = "Import a legacy feed (CSV or JSON lines) as a user's offers or bids (SPEC 8.2)."

    def add_arguments(self, parser):
        parser.add_argument("--market", required=True, help="the market's subject")
        parser.add_argument("--side", required=True, choices=["offer", "bid"])
        parser.add_argument("--user", required=True, help="the username the orders belong to")
        parser.add_argument(
            "--map",
            help="a map file (docs/adapters.md); default: columns named like the attributes, as equalities",
        )
        parser.add_argument(
            "file", help="the feed: .csv, .jsonl or .ndjson, or as the map's format says"
        )

    def handle(self, *args, **options):
        path, side = options["file"], options["side"]
        try:
            market, user, feed_map, rows = self._read(options)
        except _Refused as exc:
            self.stderr.write(str(exc))
            sys.exit(2)
        results = feed_import(user=user, market=market, side=side, rows=rows, feed_map=feed_map)
        for result in results:
            if result.error is not None:
                self.stderr.write(
                    f"{path}:{result.row}:{result.error.column}: {result.error.message}"
                )
                continue
            ref = f" (ref {result.ref})" if result.ref is not None else ""
            self.stdout.write(f"{path}:{result.row}: {result.status} {side} {result.order_id}{ref}")
        counts = {s: sum(r.status == s for r in results) for s in ("created", "existing", "failed")}
        self.stdout.write(
            f"{path}: {len(results)} rows: {counts['created']} created, "
            f"{counts['existing']} existing, {counts['failed']} failed"
        )
        if counts["failed"]:
            sys.exit(2)

    def _read(self, options):
        """The market, user, map and rows, or ``_Refused`` with the one line to print."""
        subject, path = options["market"], options["file"]
        market = market_by_subject(subject=subject)
        if market is None:
            raise _Refused(f"--market: there is no market {subject}")
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise _Refused(f"--user: there is no user {options['user']}")
        schema = market_schema(market=market)
        if options["map"] is None:
            feed_map = map_default(schema)
        else:
            try:
                feed_map = map_load(_bytes(options["map"]), schema=schema, side=options["side"])
            except MapError as exc:
                raise _Refused(f"{options['map']}: {exc}") from None
        fmt = feed_map.format or _FORMATS_BY_SUFFIX.get(Path(path).suffix.lower())
        if fmt is None:
            raise _Refused(
                f"{path}: cannot tell the format: name the file .csv, .jsonl or .ndjson, "
                'or give the map a "format"'
            )
        try:
            rows = feed_rows(_bytes(path), fmt=fmt, feed_map=feed_map)
        except FeedError as exc:
            where = f"{path}:{exc.row}" if exc.row is not None else path
            raise _Refused(f"{where}: {exc.message}") from None
        return market, user, feed_map, rows


def _bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise _Refused(f"{path}: cannot read it: {exc.strerror or exc}") from None
