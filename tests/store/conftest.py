"""Fixtures for the constraint store tests: a psycopg connection to the test database.

The stores do not use Django; Django's test setup only creates the database. Each
store gets a PostgreSQL schema of its own, dropped after the test, so that tests
never see each other's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from exchange.management.commands.match_files import database_conninfo
from matching.store import DatabaseStore, open_store


@pytest.fixture(scope="session")
def store_conninfo(django_db_setup: Any, django_db_blocker: Any) -> str:
    """The test database (created by pytest-django) as a libpq conninfo string."""
    with django_db_blocker.unblock():
        return database_conninfo()


@pytest.fixture(scope="session")
def pg(store_conninfo: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(store_conninfo, autocommit=True) as conn:
        yield conn


MakeStore = Callable[[str], DatabaseStore]


@pytest.fixture
def make_store(pg: psycopg.Connection[Any]) -> Iterator[MakeStore]:
    """``make_store("range")``: a new, empty store in a fresh namespace."""
    made: list[DatabaseStore] = []

    def make(strategy: str) -> DatabaseStore:
        store = open_store(pg, strategy=strategy, namespace=f"test_{uuid.uuid4().hex[:16]}")
        assert isinstance(store, DatabaseStore)
        store.create()
        made.append(store)
        return store

    yield make
    for store in made:
        store.drop()
