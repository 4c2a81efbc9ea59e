"""A Django cursor whose parameters PostgreSQL binds, so that psycopg prepares its statement.

Django's psycopg backend quotes every parameter into the statement's text in Python
(psycopg's ``ClientCursor``), so PostgreSQL parses and plans each statement again and no
statement is ever prepared, whatever the connection's ``prepare_threshold``. For a statement
a hot path runs on every request, a cursor that sends the parameters apart lets psycopg
prepare it on a connection after its fifth run: a bid's insert (``orders._bid_insert``) cost
its request 531 µs of CPU and its PostgreSQL backend 500 µs through Django's cursor, and
414 and 300 µs through this one (300 inserts in a rolled-back transaction, 5 rounds each
way, medians; AMD EPYC, loaded). The cursor is Django's wrapper around it, so query
capture (``assertNumQueries``, the query budgets) and error wrapping behave as for any other.

A statement run through it must give its parameters types PostgreSQL can infer (casts
where a context does not say): they are no longer literals in the text.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper


def server_bound_cursor() -> Any:
    """A cursor of Django's default connection (use it as a context manager, like
    ``connection.cursor()``) that binds parameters on the server."""
    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = psycopg.Cursor(connection.connection)
    # What Django's own ``cursor()`` wraps a cursor in: one that logs its statements while
    # queries are logged (DEBUG, a test capturing them), else the plain wrapper.
    if connection.queries_logged:
        return _ComposedDebugWrapper(raw, connection)
    return CursorWrapper(raw, connection)


class _ComposedDebugWrapper(CursorDebugWrapper):
    """Logs each statement with its parameters quoted in, as Django's cursor logs it (Django
    reads it back from psycopg's client-side query, which a prepared statement has not)."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        try:
            shown = self.db.ops.compose_sql(sql, params)
        except psycopg.Error:
            shown = sql
        with self.debug_sql(shown, params):
            return CursorWrapper.execute(self, sql, params)
