"""The token and market a request looks up are kept per process under the version that every
write to users, tokens and markets replaces (exchange/selectors/lookups.py, migration 0020):
a kept row saves its statement, and a revoked token, a deactivated user or a changed market
takes effect with the next request, however it was written."""

from __future__ import annotations

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from psycopg_pool import ConnectionPool
from rest_framework.authtoken.models import Token

from exchange.models import Market
from exchange.selectors import lookups
from exchange.services.markets import market_update
from exchange.services.tokens import token_revoke
from tests.api.conftest import client_for
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db

BIDS = "/api/v1/bids/"


def _bid(client, constraint: str = "lot = 10 AND price <= 1.50", subject: str = ""):
    body = {"market": subject or "office.supplies.pencils", "constraint": constraint}
    return client.post(BIDS, body, format="json")


def _tables(queries: CaptureQueriesContext) -> list[str]:
    """The lookups among the statements: each names the token, market and version tables it
    reads (``token+version`` for a token read with the version)."""
    names = {"authtoken_token": "token", "exchange_market": "market"}
    names["exchange_lookup_version"] = "version"
    out = []
    for q in queries.captured_queries:
        read = [
            n for table, n in names.items() if f'"{table}"' in q["sql"] or f" {table} " in q["sql"]
        ]
        if read and q["sql"].startswith("SELECT") and " FOR " not in q["sql"]:
            out.append("+".join(read))
    return out


def test_a_second_request_reads_the_version_instead_of_its_token_and_market():
    pencils_market()
    client = client_for(UserFactory())
    with CaptureQueriesContext(connection) as first:
        assert _bid(client).status_code == 201
    # The first reads its token with the version, then its market: as many statements as
    # without the kept rows.
    assert _tables(first) == ["token+version", "market"]
    statements = len(first.captured_queries)
    with CaptureQueriesContext(connection) as second:
        assert _bid(client, "lot = 11 AND price <= 1.50").status_code == 201
    assert _tables(second) == ["version"]
    assert len(second.captured_queries) == statements - 1


def test_a_revoked_token_is_refused_by_the_next_request():
    pencils_market()
    user = UserFactory()
    client = client_for(user)
    assert client.get(BIDS).status_code == 200
    assert client.get(BIDS).status_code == 200  # served from the kept token
    unknown = client_for(None)
    unknown.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    expected = unknown.get(BIDS)
    token_revoke(user=user)
    refused = client.get(BIDS)
    assert refused.status_code == 401 == expected.status_code
    assert refused.json() == expected.json()


def test_a_user_deactivated_by_a_bulk_update_is_refused_by_the_next_request():
    # update() sends no signal: the version changes in the database itself.
    pencils_market()
    user = UserFactory()
    client = client_for(user)
    assert client.get(BIDS).status_code == 200
    assert client.get(BIDS).status_code == 200
    User.objects.filter(pk=user.pk).update(is_active=False)
    refused = client.get(BIDS)
    assert refused.status_code == 401
    assert "inactive" in str(refused.json()).lower()


def test_a_market_rule_change_applies_to_the_next_bid():
    market = pencils_market()
    client = client_for(UserFactory())
    graded = "lot = 12 AND price <= 1.50 AND grade = 'HB'"
    assert _bid(client).status_code == 201
    assert _bid(client, graded).status_code == 400  # no such attribute yet
    schema = [dict(a) for a in market.schema] + [{"name": "grade", "type": "string"}]
    market_update(market_id=market.pk, schema=schema)
    assert _bid(client, graded).status_code == 201


def test_a_market_renamed_behind_the_services_back_is_unknown_to_the_next_bid():
    market = pencils_market()
    client = client_for(UserFactory())
    assert _bid(client).status_code == 201
    Market.objects.filter(pk=market.pk).update(subject="office.supplies.crayons")
    refused = _bid(client)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "unknown_market"
    assert _bid(client, subject="office.supplies.crayons").status_code == 201


def test_outside_a_request_every_lookup_reads_its_row():
    market = pencils_market()
    key = Token.objects.create(user=UserFactory()).key
    with CaptureQueriesContext(connection) as queries:
        for _ in range(2):
            assert lookups.token_with_user(key=key) is not None
            assert lookups.market_by_subject(subject=market.subject) is not None
    assert _tables(queries) == ["token", "market", "token", "market"]


def _raw_connection() -> psycopg.Connection:
    return psycopg.connect(**connection.get_connection_params(), autocommit=True)


def test_the_pool_check_reads_the_version_for_a_request_and_nothing_outside_one():
    with connection.cursor() as cursor:
        cursor.execute("SELECT version::text FROM exchange_lookup_version")
        (stored,) = cursor.fetchone()
    raw = _raw_connection()
    try:
        lookups.pool_check(raw)  # outside a request: psycopg_pool's own check
        assert lookups._request_version.get() == lookups.OUTSIDE
        lookups.request_lookups_begin()
        try:
            lookups.pool_check(raw)
            assert lookups._request_version.get() == stored
        finally:
            lookups.request_lookups_end()
    finally:
        raw.close()
    lookups.request_lookups_begin()
    try:
        with pytest.raises(psycopg.OperationalError):
            lookups.pool_check(raw)  # a dead connection fails the check as before
    finally:
        lookups.request_lookups_end()


def test_the_pool_check_is_installed_where_the_pool_checks_connections():
    pool = ConnectionPool(open=False, check=ConnectionPool.check_connection)
    lookups.pool_check_install(pool)
    assert pool._check is lookups.pool_check
    unchecked = ConnectionPool(open=False)
    lookups.pool_check_install(unchecked)
    assert unchecked._check is None
    lookups.pool_check_install(None)  # no pool: nothing to do
