"""The ``range`` strategy's wildcard handling: work that does not grow with wildcards.

These tests look at the executed plan (rows read per relation), never at the clock.
"""

from __future__ import annotations

import itertools
from typing import Any

import psycopg

import matching
from matching.store import PaperStore, RangeStore
from matching.store.explain import plan_of, rows_read
from tests.store.conftest import MakeStore


def _sub_side(name: str) -> bool:
    return name.endswith("_subs") or name in ("sub_master", "sub_shapes")


def _pub_side(name: str) -> bool:
    return name.endswith("_pubs") or name in ("pub_master", "pub_shapes")


PUBLICATION = "lot = 5000 AND price = 1.00"

# Subscriptions with wildcards that cannot match PUBLICATION, each for another reason.
HOPELESS = [
    "int lot = * AND price <= 0.50",  # the price excludes it
    "int lot = * AND decimal size = *",  # it says nothing about the price
    "int other = *",  # nothing in common
]
MATCHING = [
    "lot IN [1000, 10000] AND price <= 1.10",
    "int lot = * AND price <= 2.00",  # a wildcard subscription that matches
    "int lot = * AND decimal price = * AND colour = 'red'",  # matched by shape alone
]


def _load_subscriptions(store: Any, ids: Any, copies: int) -> None:
    parsed = [matching.parse(text) for text in HOPELESS]
    store.bulk_load(subscriptions=[(next(ids), c) for c in parsed for _ in range(copies)])


def test_matching_a_publication_reads_no_wildcard_subscription_that_cannot_match(
    make_store: MakeStore, pg: psycopg.Connection[Any]
) -> None:
    store = make_store("range")
    assert isinstance(store, RangeStore)
    ids = itertools.count(1)
    store.add_subscriptions([(next(ids), matching.parse(t)) for t in MATCHING])
    store.add_publications([(1, matching.parse(PUBLICATION))])

    read = []
    for copies in (2_000, 20_000):
        # Given more and more wildcard subscriptions that cannot match
        _load_subscriptions(store, ids, copies)
        # When the publication is matched
        with pg.cursor() as cur:
            plan = plan_of(cur, store.match_sql(cur, "publications"), {"ids": [1]})
        assert store.match_publications([1]) == {(1, 1), (1, 2), (1, 3)}
        read.append(rows_read(plan, _sub_side))

    # Then the rows read on the subscription side stay a few (the matching subscriptions,
    # the shapes), with 6,000 hopeless ones and with 66,000: they do not grow with them
    assert max(read) < 20, read


def test_matching_a_subscription_reads_no_publication_that_cannot_match(
    make_store: MakeStore, pg: psycopg.Connection[Any]
) -> None:
    store = make_store("range")
    assert isinstance(store, RangeStore)
    ids = itertools.count(100)
    store.add_subscriptions([(1, matching.parse("int lot = * AND price <= 1.10"))])
    store.add_publications([(2, matching.parse("lot = 7 AND price = 1.00"))])

    read = []
    for copies in (2_000, 20_000):
        # Given many publications the wildcard subscription cannot match
        hopeless = [
            matching.parse(t)
            for t in ("lot = 7 AND price = 5.00", "lot = 7 AND colour = 'red'", "y = 1")
        ]
        store.bulk_load(publications=[(next(ids), c) for c in hopeless for _ in range(copies)])
        with pg.cursor() as cur:
            plan = plan_of(cur, store.match_sql(cur, "subscriptions"), {"ids": [1]})
        assert store.match_subscriptions([1]) == {(2, 1)}
        read.append(rows_read(plan, _pub_side))
    assert max(read) < 20, read


def test_the_paper_strategy_joins_every_wildcard_row(make_store: MakeStore) -> None:
    # The contrast: in the paper's design a wildcard is a row meeting every row of its field.
    store = make_store("paper")
    assert isinstance(store, PaperStore)
    ids = itertools.count(1)
    store.add_subscriptions([(next(ids), matching.parse(t)) for t in MATCHING])
    store.add_publications([(1, matching.parse(PUBLICATION))])
    _load_subscriptions(store, ids, 2_000)
    assert store.match_publications([1]) == {(1, 1), (1, 2), (1, 3)}
    assert len(store.intermediate_answer()) >= 2 * 2_000
