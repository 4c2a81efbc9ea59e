"""Plain lookups by a public name, for the edges (API views) that must not query themselves.

The two that every order request makes (its token, its market) are one SQL statement each,
with the instances built from the row by ``Model.from_db``: through the ORM they cost about
1.2 and 1.1 ms of CPU per request, a fifth of ``POST /api/v1/bids/`` (issue 17), and as
plain statements about 0.3 ms. tests/api/test_lookups.py checks that they load every field
as the ORM does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Model
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


def market_by_subject(*, subject: str) -> Market | None:
    """The market named ``subject`` (no counts annotated: cheaper than ``ui.market_get``)."""
    with connection.cursor() as cursor:
        cursor.execute(_MARKET, [subject])
        row = cursor.fetchone()
    return None if row is None else _instance(Market, row)


def token_with_user(*, key: str) -> Token | None:
    """The API token ``key`` with its user loaded (what DRF's ``TokenAuthentication`` reads
    with ``select_related("user")``), or None."""
    with connection.cursor() as cursor:
        cursor.execute(_TOKEN, [key])
        row = cursor.fetchone()
    if row is None:
        return None
    width = len(Token._meta.concrete_fields)
    token = _instance(Token, row[:width])
    token.user = _instance(User, row[width:])
    return token
