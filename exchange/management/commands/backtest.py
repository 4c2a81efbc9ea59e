"""``manage.py backtest QUERY --since T [--until T] [--user NAME]``: a pattern (SPEC 8.3
form 3) run over the log's past on Spark (``SPARK_MASTER``), partitioned by subject
(``exchange/analytics/backtest.py``). Prints one JSON line per notification, as
``subscription_run`` prints them for the same events registered at ``--since``.

The events read are those of ``[since, until)`` (``until`` defaults to now) that ``--user``
may see (SPEC 5.6; without it, the public ones). Refused, with status 2 and a message on
stderr: a bad query (``QUERY:1:COLUMN: message``), a query that is not a pattern, a pattern
whose steps do not all require the same subject, an unknown user, a bad or empty range.
"""

from __future__ import annotations

import json
import sys
from typing import NoReturn

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand
from django.utils import timezone

from exchange.analytics.backtest import (
    NotPartitionable,
    backtest_on_spark,
    events_sql,
    subject_tied,
)
from exchange.analytics.services import jdbc_source
from exchange.models.events import EVENT_TABLE
from exchange.selectors.history import LINE_SQL
from matching.spark import spark_session
from matching.subscriptions import EventError, QueryError, parse_query, parse_timestamp
from matching.subscriptions.patterns.model import PatternQuery


class Command(BaseCommand):
    help = "Backtest a pattern over the log's past on Spark (SPEC 8.3 form 3)."

    def add_arguments(self, parser):
        parser.add_argument("query", help="a pattern, in SPEC 8.3's language")
        parser.add_argument("--since", required=True, help="the range's start (ISO 8601)")
        parser.add_argument("--until", help="the range's end, excluded (default: now)")
        parser.add_argument("--user", help="read the log as this user sees it (default: public)")

    def handle(self, *args, **options):
        text = options["query"]
        try:
            query = parse_query(text)
        except QueryError as exc:
            self._refuse(f"QUERY:1:{(exc.position or 0) + 1}: {exc.message}")
        if not isinstance(query, PatternQuery):
            self._refuse(
                "QUERY: backtest runs patterns (SPEC 8.3 form 3) on Spark; other forms are "
                "backtested by POST /api/v1/subscriptions/test/"
            )
        try:
            subject_tied(query)
        except NotPartitionable as exc:
            self._refuse(f"QUERY: {exc}")
        try:
            since = parse_timestamp(options["since"], "--since")
            until = (
                timezone.now()
                if options["until"] is None
                else parse_timestamp(options["until"], "--until")
            )
        except EventError as exc:
            self._refuse(exc.message)
        if until <= since:
            self._refuse("--until: the range is empty (--until must be after --since)")
        viewer = "e.owner_id IS NULL"
        if options["user"] is not None:
            user = User.objects.filter(username=options["user"]).first()
            if user is None:
                self._refuse(f"--user: there is no user {options['user']!r}")
            if user.is_staff:
                viewer = "TRUE"
            else:
                viewer = f"(e.owner_id IS NULL OR e.owner_id = {int(user.pk)})"
        spark = spark_session(settings.SPARK_MASTER, app_name="intersect-backtest")
        events = events_sql(
            table=EVENT_TABLE, line_sql=LINE_SQL, since=since, until=until, viewer=viewer
        )
        lines = backtest_on_spark(spark, jdbc_source(), text=text, since=since, events=events)
        for line in lines:
            self.stdout.write(json.dumps(line))

    def _refuse(self, message: str) -> NoReturn:
        self.stderr.write(message)
        sys.exit(2)
