"""Incremental matching, deletion, bulk loading and transactions."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

import matching
from matching.model import Constraint
from matching.store import ConstraintStore, MemoryStore, StoreError, open_store
from tests.store.conftest import MakeStore
from tests.store.generate import constraint_text, constraints


def _oracle(pubs: dict[int, Constraint], subs: dict[int, Constraint]) -> set[tuple[int, ...]]:
    memory = MemoryStore()
    memory.add_publications(pubs.items())
    memory.add_subscriptions(subs.items())
    return memory.match_disjuncts("all")


@pytest.mark.parametrize("strategy", ["paper", "range", "memory"])
def test_incremental_results_equal_matching_from_scratch(
    make_store: MakeStore, strategy: str
) -> None:
    rng = random.Random(404)
    store: ConstraintStore = MemoryStore() if strategy == "memory" else make_store(strategy)
    assert len(check_incremental(store, rng)) > 100


def check_incremental(
    store: ConstraintStore,
    rng: random.Random,
    *,
    text: Callable[..., str] = constraint_text,
    rounds: int = 5,
) -> set[tuple[int, int, int, int]]:
    """Rounds of deletes, amendments and additions, each matched incrementally.

    After every round the matches collected incrementally must equal a match from
    scratch and the oracle's answer; returns the last round's matches.
    """
    ids = itertools.count(1)
    pubs: dict[int, Constraint] = {}
    subs: dict[int, Constraint] = {}
    known: set[tuple[int, int, int, int]] = set()

    def draw(new_ids: list[int], max_predicates: int) -> dict[int, Constraint]:
        drawn = constraints(rng, len(new_ids), max_predicates=max_predicates, text=text)
        return dict(zip(new_ids, (c for _, c in drawn), strict=True))

    for _ in range(rounds):
        # Given some deletions (unknown ids among them, which are ignored) ...
        gone_pubs = rng.sample(sorted(pubs), k=min(len(pubs), rng.randint(0, 12)))
        gone_subs = rng.sample(sorted(subs), k=min(len(subs), rng.randint(0, 12)))
        store.delete_publications([*gone_pubs, 10**12])
        store.delete_subscriptions([*gone_subs, 10**12])
        for i in gone_pubs:
            del pubs[i]
        for i in gone_subs:
            del subs[i]
        known = {q for q in known if q[0] not in gone_pubs and q[2] not in gone_subs}

        # ... and new constraints, some of them under an id just deleted (an amendment)
        new_pubs = draw([*gone_pubs[:3], *(next(ids) for _ in range(25))], 2)
        new_subs = draw([*gone_subs[:3], *(next(ids) for _ in range(25))], 4)
        store.add_publications(new_pubs.items())
        store.add_subscriptions(new_subs.items())
        pubs.update(new_pubs)
        subs.update(new_subs)

        # When only the new publications and the new subscriptions are matched
        known |= store.match_disjuncts("publications", new_pubs)
        known |= store.match_disjuncts("subscriptions", new_subs)

        # Then the merged results equal a match from scratch, and the oracle
        assert known == store.match_disjuncts("all")
        assert known == _oracle(pubs, subs)
    return known


@pytest.mark.parametrize("strategy", ["paper", "range"])
def test_bulk_load_into_a_filled_store_keeps_its_indexes(
    make_store: MakeStore, pg: psycopg.Connection[Any], strategy: str
) -> None:
    store = make_store(strategy)

    def index_names() -> list[str]:
        with pg.cursor() as cur:
            cur.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s ORDER BY 1",
                [store.namespace],
            )
            return [name for (name,) in cur.fetchall()]

    indexes = index_names()
    store.bulk_load(
        publications=[(1, matching.parse("x = 1"))], subscriptions=[(1, matching.parse("x < 3"))]
    )
    assert index_names() == indexes
    store.bulk_load(
        publications=[(2, matching.parse("x = 2"))], subscriptions=[(2, matching.parse("x > 1"))]
    )
    assert index_names() == indexes
    assert store.match_all() == {(1, 1), (2, 1), (2, 2)}


@pytest.mark.parametrize("strategy", ["paper", "range"])
def test_a_failed_add_changes_nothing(make_store: MakeStore, strategy: str) -> None:
    store = make_store(strategy)
    store.add_subscriptions([(1, matching.parse("x = 1"))])
    store.add_publications([(1, matching.parse("x = 1"))])

    # A duplicate id, after a good one in the same call, fails the whole call
    with pytest.raises(psycopg.errors.UniqueViolation):
        store.add_publications([(2, matching.parse("x = 1")), (1, matching.parse("x = 1"))])
    assert store.match_all() == {(1, 1)}

    with pytest.raises(StoreError):
        store.add_publications([(2**63, matching.parse("x = 1"))])


@pytest.mark.parametrize("strategy", ["paper", "range"])
def test_the_store_never_commits_the_callers_transaction(
    make_store: MakeStore, store_conninfo: str, strategy: str
) -> None:
    namespace = make_store(strategy).namespace
    with psycopg.connect(store_conninfo) as conn:  # not autocommit: the caller's transaction
        store = open_store(conn, strategy=strategy, namespace=namespace)
        store.add_publications([(1, matching.parse("x = 1"))])
        store.add_subscriptions([(1, matching.parse("x = 1"))])
        assert store.match_all() == {(1, 1)}
        conn.rollback()
        assert store.match_all() == set()
        conn.rollback()


def test_a_store_refuses_to_drop_a_schema_it_did_not_create(pg: psycopg.Connection[Any]) -> None:
    with pg.cursor() as cur:
        cur.execute("CREATE SCHEMA test_not_a_store")
    try:
        with pytest.raises(StoreError, match="not created by a constraint store"):
            open_store(pg, strategy="range", namespace="test_not_a_store").drop()
        with pytest.raises(StoreError):
            open_store(pg, strategy="range", namespace="public")
    finally:
        with pg.cursor() as cur:
            cur.execute("DROP SCHEMA test_not_a_store")
