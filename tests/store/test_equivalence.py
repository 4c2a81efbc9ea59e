"""``paper``, ``range`` and the oracle (``memory``) return exactly the same matches."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import matching
from matching.store import DatabaseStore, MemoryStore, open_store
from tests.store.conftest import MakeStore
from tests.store.generate import STRINGS, constraints

DB_STRATEGIES = ("paper", "range")


def oracle(pubs: list[tuple[int, Any]], subs: list[tuple[int, Any]]) -> set[tuple[int, ...]]:
    memory = MemoryStore()
    memory.add_publications(pubs)
    memory.add_subscriptions(subs)
    return memory.match_disjuncts("all")


def test_thousands_of_random_pairs_agree_at_disjunct_level(make_store: MakeStore) -> None:
    # Given 400 x 400 random constraints over every type, operator and wildcards
    rng = random.Random(20260101)
    pubs = [(i, c) for i, (_, c) in enumerate(constraints(rng, 400, max_predicates=2))]
    subs = [(i, c) for i, (_, c) in enumerate(constraints(rng, 400, max_predicates=4))]
    expected = oracle(pubs, subs)
    expected_pairs = {(q[0], q[2]) for q in expected}
    assert len(expected_pairs) > 10_000  # a good share of the 160,000 pairs match

    for strategy in DB_STRATEGIES:
        # When a store of each strategy matches them from scratch
        store = make_store(strategy)
        store.bulk_load(publications=pubs, subscriptions=subs)

        # Then it finds exactly the oracle's disjunct pairs, and so the same pairs
        assert store.match_disjuncts("all") == expected, strategy
        assert store.match_all() == expected_pairs, strategy

        # And batches of publications or subscriptions give their share of the same answer
        batch = [i for i, _ in pubs[:150]]
        assert store.match_publications(batch) == {p for p in expected_pairs if p[0] < 150}
        subs_batch = [i for i, _ in subs[200:260]]
        assert store.match_subscriptions(subs_batch) == {
            p for p in expected_pairs if 200 <= p[1] < 260
        }


# -- hypothesis: many small cases, shrunk when they fail --------------------------------


@pytest.fixture(scope="module")
def shared_stores(store_conninfo: str) -> Iterator[dict[str, DatabaseStore]]:
    # One store per strategy for all examples (creating one per example is slow);
    # every example deletes what it added.
    with psycopg.connect(store_conninfo, autocommit=True) as conn:
        stores = {}
        for strategy in DB_STRATEGIES:
            store = open_store(conn, strategy=strategy, namespace=f"test_hypothesis_{strategy}")
            assert isinstance(store, DatabaseStore)
            store.drop()
            store.create()
            stores[strategy] = store
        yield stores
        for store in stores.values():
            store.drop()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rng=st.randoms(use_true_random=False),
    n_pubs=st.integers(1, 8),
    n_subs=st.integers(1, 8),
)
def test_small_random_cases_agree(
    shared_stores: dict[str, DatabaseStore], rng: random.Random, n_pubs: int, n_subs: int
) -> None:
    pubs = [(i, c) for i, (_, c) in enumerate(constraints(rng, n_pubs, max_predicates=3))]
    subs = [(i, c) for i, (_, c) in enumerate(constraints(rng, n_subs, max_predicates=4))]
    expected = oracle(pubs, subs)
    for strategy, store in shared_stores.items():
        store.add_publications(pubs)
        store.add_subscriptions(subs)
        try:
            assert store.match_disjuncts("all") == expected, strategy
        finally:
            store.delete_publications([i for i, _ in pubs])
            store.delete_subscriptions([i for i, _ in subs])


# -- points and boxes: every operator pair of SPEC 3.2 on a grid -----------------------


def test_every_box_and_point_operator_pair_on_a_grid(make_store: MakeStore) -> None:
    # Given every box with corners on a 3x3 grid under each operator, and every point
    # and WITHIN box: touching, nested, equal, disjoint and degenerate cases all occur
    grid = ["0", "1", "2"]
    boxes = [
        f"BOX({x1}, {y1}, {x2}, {y2})"
        for x1, x2 in itertools.combinations_with_replacement(grid, 2)
        for y1, y2 in itertools.combinations_with_replacement(grid, 2)
    ]
    texts = [f"bx {op} {b}" for op in ("=", "OVERLAPS", "CONTAINS", "WITHIN") for b in boxes]
    texts += [f"pt = POINT({x}, {y})" for x in grid for y in grid]
    texts += [f"point pt WITHIN {b}" for b in boxes]
    items = [(i, matching.parse(t)) for i, t in enumerate(texts)]
    expected = oracle(items, items)

    for strategy in DB_STRATEGIES:
        store = make_store(strategy)
        store.bulk_load(publications=items, subscriptions=items)
        # Then both strategies agree with the table of SPEC 3.2, pair by pair
        assert store.match_disjuncts("all") == expected, strategy


@pytest.mark.parametrize("strategy", DB_STRATEGIES)
def test_geometry_is_exact_where_postgresql_operators_are_fuzzy(
    make_store: MakeStore, strategy: str
) -> None:
    # PostgreSQL's box and point operators treat values 1e-6 apart as equal.
    pubs = [
        (1, "bx = BOX(0, 0, 1, 1)"),
        (2, "pt = POINT(1, 1)"),
        (3, "bx WITHIN BOX(0, 0, 1, 1)"),
    ]
    subs = [
        (10, "bx OVERLAPS BOX(1.0000001, 0, 2, 1)"),  # a gap of 1e-7: no
        (11, "bx = BOX(0, 0, 1, 1.0000001)"),  # not equal: no
        (12, "bx CONTAINS BOX(0, 0, 1, 1.0000001)"),  # sticks out: no
        (13, "point pt WITHIN BOX(1.0000001, 0, 2, 2)"),  # no
        (14, "pt = POINT(1, 1.0000001)"),  # no
        (15, "bx OVERLAPS BOX(1, 1, 2, 2)"),  # touching: yes (1, 15), and (3, 15)
        (16, "bx WITHIN BOX(1.0000001, 0, 2, 1)"),  # no
    ]
    pub_items = [(i, matching.parse(t)) for i, t in pubs]
    sub_items = [(i, matching.parse(t)) for i, t in subs]
    store = make_store(strategy)
    store.bulk_load(publications=pub_items, subscriptions=sub_items)
    assert store.match_all() == {(1, 15), (3, 15)}
    assert store.match_disjuncts("all") == oracle(pub_items, sub_items)


@pytest.mark.parametrize("strategy", DB_STRATEGIES)
def test_strings_with_quotes_backslashes_commas_and_brackets(
    make_store: MakeStore, strategy: str
) -> None:
    # Given string constraints on values that are special in range and COPY syntax
    nasty = [*STRINGS, 'a\\"b', '"', "\\", "a)", "(,)", "x y z", "tab\there", "line\nbreak", "日本"]
    quoted = ["'" + s.replace("'", "''") + "'" for s in nasty]
    pubs = [(i, matching.parse(f"s = {q}")) for i, q in enumerate(quoted)]
    subs = [(i, matching.parse(f"s = {q}")) for i, q in enumerate(quoted)]
    subs += [(100 + i, matching.parse(f"s <= {q}")) for i, q in enumerate(quoted)]
    subs += [(200 + i, matching.parse(f"s > {q}")) for i, q in enumerate(quoted)]
    store = make_store(strategy)
    store.bulk_load(publications=pubs, subscriptions=subs)

    # Then equality matches exactly the same string, and order is by code point
    result = store.match_disjuncts("all")
    assert result == oracle(pubs, subs)
    assert {(p, s) for p, _, s, _ in result if s < 100} == {(i, i) for i in range(len(nasty))}


def test_range_store_keeps_the_exact_string_in_its_ranges(
    make_store: MakeStore, pg: psycopg.Connection[Any]
) -> None:
    nasty = ['a\\"b', '"', "\\", "a)", "(,)", " x ", "", "tab\there"]
    store = make_store("range")
    store.add_subscriptions(
        [
            (i, matching.parse("s IN [" + ", ".join(["'" + s.replace("'", "''") + "'"] * 2) + "]"))
            for i, s in enumerate(nasty)
        ]
    )
    with pg.cursor() as cur:
        cur.execute(f"SELECT id, lower(val), upper(val) FROM {store.q('string_subs')} ORDER BY id")
        # ('' is the smallest string, so s = '' has no lower bound once normalized)
        assert cur.fetchall() == [(i, s or None, s) for i, s in enumerate(nasty)]


@pytest.mark.parametrize("strategy", DB_STRATEGIES)
def test_values_at_the_edges_of_their_domains(make_store: MakeStore, strategy: str) -> None:
    big, small = 2**63 - 1, -(2**63)
    pubs = [
        (1, f"int n = {big}"),
        (2, f"int n = {small}"),
        (3, f"int n >= {big - 1}"),
        (4, "d = DATE '9999-12-31'"),
        (5, "d = DATE '0001-01-01'"),
        (6, "t = TIMESTAMP '0001-01-01T00:00:00Z'"),
        (7, "f = 1.7976931348623157e308"),
        (8, "f = 5e-324"),
        (9, "c = 123456789012345678901234567890.0000000001"),  # 40 digits, the most allowed
        (10, "pt = POINT(-1.7976931348623157e308, 1.7976931348623157e308)"),
    ]
    subs = [
        (1, f"int n >= {big}"),
        (2, f"int n <= {small}"),
        (3, f"int n IN ({big - 2}, {big})"),
        (4, "d > DATE '9999-12-30'"),
        (5, "d < DATE '0001-01-02'"),
        (6, "t < TIMESTAMP '0001-01-01T00:00:00.000001Z'"),
        (7, "f > 1e308"),
        (8, "f IN (0e0, 1e-300)"),
        (9, "decimal c > 123456789012345678901234567890"),
        (10, "point pt WITHIN BOX(-1.7976931348623157e308, 0, 0, 1.7976931348623157e308)"),
        (11, "int n = 0"),
    ]
    pub_items = [(i, matching.parse(t)) for i, t in pubs]
    sub_items = [(i, matching.parse(t)) for i, t in subs]
    store = make_store(strategy)
    store.bulk_load(publications=pub_items, subscriptions=sub_items)
    expected = oracle(pub_items, sub_items)
    assert {(q[0], q[2]) for q in expected} >= {(i, i) for i in range(1, 11)}
    assert store.match_disjuncts("all") == expected


@pytest.mark.parametrize("strategy", DB_STRATEGIES)
def test_single_values_and_intervals_of_every_ordered_type_in_every_scope(
    make_store: MakeStore, strategy: str
) -> None:
    # Single values, bounded intervals and intervals unbounded on either side, on
    # each side: every kind of pair the range strategy joins differently.
    values = {
        "int": ["1", "2", "3"],
        "decimal": ["1.5", "2.5", "3.5"],
        "float": ["1e0", "2e0", "3e0"],
        "date": ["DATE '2026-01-01'", "DATE '2026-01-02'", "DATE '2026-01-03'"],
        "timestamp": [
            "TIMESTAMP '2026-01-01T00:00:00Z'",
            "TIMESTAMP '2026-01-01T00:00:01Z'",
            "TIMESTAMP '2026-01-01T00:00:02Z'",
        ],
        "string": ["'a'", "'b'", "'c'"],
    }
    texts = []
    for t, (lo, mid, hi) in values.items():
        texts += [f"{t} v = {v}" for v in (lo, mid, hi)]
        texts += [f"{t} v IN ({lo}, {hi})", f"{t} v BETWEEN {lo} AND {mid}"]
        texts += [f"{t} v > {mid}", f"{t} v >= {mid}", f"{t} v < {mid}", f"{t} v <= {lo}"]
    items = [(i, matching.parse(text)) for i, text in enumerate(texts)]
    expected = oracle(items, items)
    store = make_store(strategy)
    store.add_publications(items)
    store.add_subscriptions(items)

    assert store.match_disjuncts("all") == expected
    per_type = len(texts) // len(values)
    for start in range(0, len(items), per_type):
        batch = set(range(start, start + per_type))
        assert store.match_disjuncts("publications", batch) == {
            q for q in expected if q[0] in batch
        }
        assert store.match_disjuncts("subscriptions", batch) == {
            q for q in expected if q[2] in batch
        }
