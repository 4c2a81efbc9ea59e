"""Plain lookups by a public name, for the edges (API views) that must not query themselves.

The two that every order request makes (its token, its market) are one SQL statement each,
with the instances built from the row by ``Model.from_db``: through the ORM they cost about
1.2 and 1.1 ms of CPU per request, a fifth of ``POST /api/v1/bids/`` (issue 17), and as
plain statements about 0.3 ms. tests/api/test_lookups.py checks that they load every field
as the ORM does.

Inside a request, their rows are also kept per process under the version of
``exchange_lookup_version``, which every write to users, tokens and markets replaces in its
own transaction (migration 0020: a statement trigger, so every way of writing counts). A
request reads that version once, with its first lookup; a row kept under the same version
is still what the table holds, so the token and market of a bid cost one small statement
instead of two (issue 36). A key not kept at all is read with the version in one statement,
so a first request costs what it did. A revoked token, a deactivated user or a changed
market is seen by the next request of every process: the write changed the version.
Outside a request (commands, tasks) nothing is kept: every lookup reads its row.

With a pool whose connections are checked when taken (``CONN_HEALTH_CHECKS``), a request
takes its connection once, with its first statement; ``pool_check`` makes that check (an
empty statement, one round trip) read the version instead, so a warm bid's token and market
cost no statement at all.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

import psycopg
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Model
from psycopg_pool import ConnectionPool
from rest_framework.authtoken.models import Token

from exchange.models import Market

ModelT = TypeVar("ModelT", bound=Model)


def _columns(model: type[Model], alias: str) -> str:
    return ", ".join(f'{alias}."{f.column}"' for f in model._meta.concrete_fields)


def _instance(model: type[ModelT], values: Sequence[Any]) -> ModelT:
    """``model`` from its concrete fields' column values in order, converted as the ORM's
    compiler converts them (``from_db_value``: the JSON fields)."""
    fields = model._meta.concrete_fields
    converted = [
        f.from_db_value(v, None, connection) if v is not None and hasattr(f, "from_db_value") else v
        for f, v in zip(fields, values, strict=True)
    ]
    return model.from_db(connection.alias, [f.attname for f in fields], converted)


_MARKET = f'SELECT {_columns(Market, "m")} FROM "{Market._meta.db_table}" m WHERE m."subject" = %s'
_TOKEN = (
    f'SELECT {_columns(Token, "t")}, {_columns(User, "u")} FROM "{Token._meta.db_table}" t '
    f'JOIN "{User._meta.db_table}" u ON u."id" = t."user_id" WHERE t."key" = %s'
)
_VERSION = "SELECT version::text FROM exchange_lookup_version WHERE id = 1"
# A lookup with the version, from one snapshot: a row kept under it is no older than it.
_WITH_VERSION = "SELECT ({version}), q.* FROM ({query}) q"

# Outside a request nothing is kept; in one, the version its first lookup read, or UNREAD.
OUTSIDE, UNREAD = "outside", "unread"
_request_version: ContextVar[str] = ContextVar("lookup_version", default=OUTSIDE)
# (statement, key) -> (version, row); rows are tuples, which no request can change.
_kept: dict[tuple[str, str], tuple[str, tuple[Any, ...]]] = {}
_kept_lock = threading.Lock()
KEPT_MAX = 10_000


def request_lookups_begin() -> None:
    """A request starts (``request_started``): its lookups may use the kept rows."""
    _request_version.set(UNREAD)


def request_lookups_end() -> None:
    """The request ended (``request_finished``): lookups read their rows again."""
    _request_version.set(OUTSIDE)


def pool_check(conn: Any) -> None:
    """psycopg_pool's ``check_connection`` for a connection a request takes: the same round
    trip (it raises as that does when the connection is dead), reading the version for the
    request's lookups. Outside a request, or if the version cannot be read (the migration
    not applied yet), the pool's own empty statement."""
    if _request_version.get() == UNREAD and conn.autocommit:
        try:
            row = conn.execute(_VERSION).fetchone()
        except psycopg.errors.UndefinedTable:
            pass
        else:
            _request_version.set(str(row[0]))
            return
    ConnectionPool.check_connection(conn)


def pool_check_install(pool: Any) -> None:
    """Make ``pool`` (Django's, for a new connection) check with ``pool_check`` where it checks
    with psycopg_pool's own (``CONN_HEALTH_CHECKS``)."""
    if pool is not None and getattr(pool, "_check", None) is ConnectionPool.check_connection:
        pool._check = pool_check


def _version(cursor: Any) -> str:
    cursor.execute(_VERSION)
    (version,) = cursor.fetchone()
    return str(version)


def _row(query: str, key: str) -> tuple[Any, ...] | None:
    """The row of ``query`` for ``key`` (None if there is none); in a request, the kept one
    while the version is the one it was kept under."""
    with connection.cursor() as cursor:
        # Read after taking the connection: the pool's check may have read it (pool_check).
        version = _request_version.get()
        if version == OUTSIDE:
            cursor.execute(query, [key])
            return cursor.fetchone()
        kept = _kept.get((query, key))
        if kept is not None:
            if version == UNREAD:
                version = _version(cursor)
                _request_version.set(version)
            if kept[0] == version:
                return kept[1]
        if version == UNREAD:
            cursor.execute(_WITH_VERSION.format(version=_VERSION, query=query), [key])
            found = cursor.fetchone()
            if found is None:
                return None
            version = str(found[0])
            _request_version.set(version)
            row = tuple(found[1:])
        else:
            cursor.execute(query, [key])
            found = cursor.fetchone()
            if found is None:  # a key that names nothing is not kept: any key can be sent
                return None
            row = tuple(found)
    with _kept_lock:
        if len(_kept) >= KEPT_MAX:
            _kept.clear()
        _kept[query, key] = (version, row)
    return row


def market_by_subject(*, subject: str) -> Market | None:
    """The market named ``subject`` (no counts annotated: cheaper than ``ui.market_get``)."""
    row = _row(_MARKET, subject)
    return None if row is None else _instance(Market, row)


def token_with_user(*, key: str) -> Token | None:
    """The API token ``key`` with its user loaded (what DRF's ``TokenAuthentication`` reads
    with ``select_related("user")``), or None."""
    row = _row(_TOKEN, key)
    if row is None:
        return None
    width = len(Token._meta.concrete_fields)
    token = _instance(Token, row[:width])
    token.user = _instance(User, row[width:])
    return token
