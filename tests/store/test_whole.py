"""The ``range`` strategy's whole-disjunct probe, against the oracle.

A *whole* disjunct has two or more predicates, every one a single value of an ordered
type (``a = 1 AND s = 'x'``). Whole disjuncts of the same fields on the two sides are
matched by one index probe on their values; every other pair still goes through the
per-predicate counting, which skips the pairs the probe answers. These tests draw
constraints where such disjuncts are common, next to the ones that must not take the
probe (a range among the values, a wildcard, a field more or less on one side), and
compare every answer with the plain-Python oracle; a plan test checks that the probe
really spares the counting.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import matching
from matching.model import Constraint
from matching.store import DatabaseStore, MemoryStore, RangeStore, open_store
from matching.store.explain import plan_of, rows_read
from matching.store.ranges import is_whole, whole_key
from tests.store.conftest import MakeStore
from tests.store.generate import constraints
from tests.store.test_incremental import check_incremental

# Few fields, few values, and values written in several ways that are equal.
FIELDS: list[tuple[str, list[str]]] = [
    ("int a", ["0", "1", "2"]),
    ("int b", ["0", "1"]),
    ("decimal p", ["1.0", "1.00", "1", "2.5"]),
    ("float f", ["0.0e0", "-0.0e0", "1e0"]),
    ("string s", ["'x'", "'y'", "'1:x'", "''"]),
    ("date d", ["DATE '2026-01-01'", "DATE '2026-01-02'"]),
    (
        "timestamp t",
        [
            "TIMESTAMP '2026-01-01T10:00:00Z'",
            "TIMESTAMP '2026-01-01T11:00:00+01:00'",  # the same instant
            "TIMESTAMP '2026-01-01T10:00:01Z'",
        ],
    ),
]


def _predicate(rng: random.Random, field: str, values: list[str]) -> str:
    form = rng.random()
    if form < 0.75:
        return f"{field} = {rng.choice(values)}"
    if form < 0.85:
        return f"{field} = *"
    if form < 0.95:
        return f"{field} <= {rng.choice(values)}"
    return f"{field} != {rng.choice(values)}"


def _conjunction(rng: random.Random, fields: list[tuple[str, list[str]]]) -> str:
    return " AND ".join(_predicate(rng, name, values) for name, values in fields)


def equality_text(rng: random.Random, *, max_predicates: int) -> str:
    """Mostly equalities over a few common field sets, sometimes one field more or less."""
    bases = [FIELDS[:2], FIELDS[:3], [FIELDS[0], FIELDS[4]], FIELDS[3:7], FIELDS]
    parts = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        fields = list(rng.choice(bases))[: max(2, max_predicates)]
        if rng.random() < 0.2 and len(fields) > 1:
            fields.pop(rng.randrange(len(fields)))  # a field less
        if rng.random() < 0.2:
            extra = rng.choice(FIELDS)
            if extra not in fields:
                fields.append(extra)  # a field more
        rng.shuffle(fields)
        parts.append(_conjunction(rng, fields))
    return " OR ".join(f"({p})" for p in parts) if len(parts) > 1 else parts[0]


def oracle(pubs: Any, subs: Any) -> set[tuple[int, ...]]:
    memory = MemoryStore()
    memory.add_publications(pubs)
    memory.add_subscriptions(subs)
    return memory.match_disjuncts("all")


def _items(rng: random.Random, count: int, start: int = 0) -> list[tuple[int, Constraint]]:
    drawn = constraints(rng, count, max_predicates=7, text=equality_text)
    return [(start + i, c) for i, (_, c) in enumerate(drawn)]


def test_whole_keys_are_equal_exactly_when_the_values_are() -> None:
    def key(text: str) -> Any:
        (disjunct,) = matching.parse(text).disjuncts
        assert is_whole(disjunct)
        return whole_key(disjunct)

    assert key("a = 1 AND p = 1.0") == key("p = 1.00 AND a = 1")
    assert key("a = 1 AND float f = 0.0") == key("a = 1 AND float f = -0.0")
    assert key("a = 1 AND t = TIMESTAMP '2026-01-01T11:00:00+01:00'") == key(
        "a = 1 AND t = TIMESTAMP '2026-01-01T10:00:00Z'"
    )
    assert key("a = 1 AND decimal p = 10") == key("a = 1 AND p = 10.000")
    assert key("a = 1 AND p = 10.0") != key("a = 1 AND p = 1.0")
    assert key("a = 1 AND s = 'x'") != key("a = 1 AND s = 'y'")
    # No value can run into the next field: lengths are part of the key
    assert key("s = '1:x' AND u = 'y'") != key("s = '1' AND u = 'x1:y'")
    # Long decimals keep every digit
    assert key("a = 1 AND p = 1." + "0" * 38 + "1") != key("a = 1 AND p = 1." + "0" * 39)
    # The type is part of the field
    assert key("int a = 1 AND int b = 1") != key("int a = 1 AND decimal b = 1")


def test_what_a_whole_disjunct_is() -> None:
    def whole(text: str) -> bool:
        (disjunct,) = matching.parse(text).disjuncts
        return is_whole(disjunct)

    assert whole("a = 1 AND s = 'x'")
    assert not whole("a = 1")  # one predicate: the per-predicate index does as well
    assert not whole("a = 1 AND b <= 2")
    assert not whole("a = 1 AND int b = *")
    assert not whole("a = 1 AND pt = POINT(1, 1)")
    assert not whole("a = 1 AND s = ''")  # '' is stored as the interval s <= ''


@pytest.mark.parametrize("seed", [1, 2])
def test_equality_heavy_constraints_agree_with_the_oracle(make_store: MakeStore, seed: int) -> None:
    # Given 200 x 200 constraints, most disjuncts whole, over shared field sets
    rng = random.Random(seed)
    pubs = _items(rng, 200)
    subs = _items(rng, 200)
    expected = oracle(pubs, subs)
    pairs = {(q[0], q[2]) for q in expected}
    whole = sum(is_whole(d) for _, c in pubs + subs for d in c.disjuncts)
    assert whole > 150 and len(pairs) > 150

    for strategy in ("range", "paper"):
        store = make_store(strategy)
        store.bulk_load(publications=pubs, subscriptions=subs)
        # Then matching everything, a batch of publications and a batch of
        # subscriptions give exactly the oracle's disjunct pairs
        assert store.match_disjuncts("all") == expected, strategy
        batch = [i for i, _ in pubs[:120]]
        assert store.match_disjuncts("publications", batch) == {
            q for q in expected if q[0] < 120
        }, strategy
        for one in (0, 7, 42):
            assert store.match_publications([one]) == {p for p in pairs if p[0] == one}
            assert store.match_subscriptions([one]) == {p for p in pairs if p[1] == one}
        batch = [i for i, _ in subs[100:180]]
        assert store.match_disjuncts("subscriptions", batch) == {
            q for q in expected if 100 <= q[2] < 180
        }, strategy


def test_missing_attributes_on_either_side(make_store: MakeStore) -> None:
    pubs = {
        1: "a = 1 AND b = 1",
        2: "a = 1 AND b = 1 AND s = 'x'",
        3: "a = 1",
        4: "(a = 1 AND b = 1) OR (a = 2 AND b = 2)",
        5: "a = 1 AND int b = *",
        6: "a = 1 AND b <= 1",
    }
    subs = {
        10: "a = 1 AND b = 1",  # the same fields: the probe
        11: "a = 1 AND b = 1 AND s = 'x'",  # a field more
        12: "a = 1 AND b = 1 AND s = 'y'",  # a field more, another value
        13: "a = 1",  # a field less: matches only publication 3
        14: "a = 1 AND b = 2",
        15: "a = 1 AND int b = *",
        16: "(a = 2 AND b = 2) OR (b = 1 AND a = 1)",
        17: "a = 1 AND b IN [1, 5]",
    }
    pub_items = [(i, matching.parse(t)) for i, t in pubs.items()]
    sub_items = [(i, matching.parse(t)) for i, t in subs.items()]
    expected = oracle(pub_items, sub_items)
    store = make_store("range")
    store.bulk_load(publications=pub_items, subscriptions=sub_items)
    assert store.match_disjuncts("all") == expected
    assert store.match_publications([1]) == {(1, s) for s in (10, 11, 12, 15, 16, 17)}
    assert store.match_publications([2]) == {(2, 11)}
    assert store.match_subscriptions([13]) == {(3, 13)}
    assert store.match_disjuncts("subscriptions", [16]) == {
        (1, 0, 16, 1),
        (3, 0, 16, 1),  # a field less on the publication's side matches
        (4, 0, 16, 1),
        (4, 1, 16, 0),
        (5, 0, 16, 1),
        (6, 0, 16, 1),
    }
    for i in pubs:
        assert store.match_disjuncts("publications", [i]) == {q for q in expected if q[0] == i}
    for i in subs:
        assert store.match_disjuncts("subscriptions", [i]) == {q for q in expected if q[2] == i}


def test_incremental_matching_and_deletes_equal_matching_from_scratch(
    make_store: MakeStore,
) -> None:
    # Rounds of deletes, amendments (a deleted id with a new constraint) and additions,
    # most disjuncts whole, each matched incrementally in both directions
    known = check_incremental(make_store("range"), random.Random(77), text=equality_text, rounds=6)
    assert len(known) > 100


def test_deleting_every_whole_disjunct_leaves_no_trace(
    make_store: MakeStore, pg: psycopg.Connection[Any]
) -> None:
    store = make_store("range")
    store.add_publications([(1, matching.parse("a = 1 AND b = 1"))])
    store.add_subscriptions([(2, matching.parse("a = 1 AND b = 1")), (3, matching.parse("a = 1"))])
    assert store.match_all() == {(1, 2)}
    store.delete_subscriptions([2])
    assert store.match_all() == set()
    store.delete_publications([1])
    with pg.cursor() as cur:
        cur.execute(f"SELECT side, op FROM {store.q('used_operators')} ORDER BY 1, 2")
        assert cur.fetchall() == [("sub", "=")]
        cur.execute(f"SELECT count(*) FROM {store.q('sub_shapes')}")
        assert cur.fetchone() == (1,)
    # The shape again, now on both sides: the probe finds the pair
    store.add_publications([(4, matching.parse("b = 5 AND a = 1"))])
    store.add_subscriptions([(5, matching.parse("a = 1 AND b = 5"))])
    assert store.match_disjuncts("all") == {(4, 0, 5, 0)}


def test_a_match_sees_kinds_another_connection_added(
    make_store: MakeStore, store_conninfo: str
) -> None:
    # Given a store that has matched (and so knows the kinds present) ...
    store = make_store("range")
    store.add_publications([(1, matching.parse("a = 1 AND b = 1"))])
    store.add_subscriptions([(1, matching.parse("a = 1"))])
    assert store.match_publications([1]) == set()
    # ... when another connection adds whole subscriptions, a kind it has not seen
    with psycopg.connect(store_conninfo, autocommit=True) as other:
        open_store(other, strategy="range", namespace=store.namespace).add_subscriptions(
            [(2, matching.parse("b = 1 AND a = 1")), (3, matching.parse("a = 1 AND b = 2"))]
        )
    # Then the next match finds them
    assert store.match_publications([1]) == {(1, 2)}
    assert store.match_subscriptions([2, 3]) == {(1, 2)}


def _sub_side(name: str) -> bool:
    return name.endswith("_subs") or name in ("sub_master", "sub_shapes")


def test_the_probe_spares_the_counting(make_store: MakeStore, pg: psycopg.Connection[Any]) -> None:
    # Given subscriptions of the publication's shape that agree with it on all but one
    # field (each of its predicates meets most of them: a large intermediate answer)
    store = make_store("range")
    assert isinstance(store, RangeStore)
    store.add_publications([(1, matching.parse("a = 1 AND b = 1 AND c = 1"))])
    store.add_subscriptions(
        [(1, matching.parse("a = 1 AND b = 1 AND c = 1")), (2, matching.parse("a = 1"))]
    )
    ids = itertools.count(100)
    read = []
    for copies in (1_000, 10_000):
        store.bulk_load(
            subscriptions=[
                (next(ids), matching.parse(f"a = 1 AND b = 1 AND c = {k}"))
                for k in range(2, copies + 2)
            ]
        )
        with pg.cursor() as cur:
            plan = plan_of(cur, store.match_sql(cur, "publications"), {"ids": [1]})
        assert store.match_publications([1]) == {(1, 1)}
        read.append(rows_read(plan, _sub_side))
    # Then the rows read on the subscription side do not grow with them
    assert max(read) < 20, read


# -- hypothesis: small cases over the same fields -----------------------------------------


@pytest.fixture(scope="module")
def whole_store(store_conninfo: str) -> Any:
    with psycopg.connect(store_conninfo, autocommit=True) as conn:
        store = open_store(conn, strategy="range", namespace="test_hypothesis_whole")
        assert isinstance(store, DatabaseStore)
        store.drop()
        store.create()
        yield store
        store.drop()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False), n_pubs=st.integers(1, 8), n_subs=st.integers(1, 8))
def test_small_equality_cases_agree(
    whole_store: DatabaseStore, rng: random.Random, n_pubs: int, n_subs: int
) -> None:
    pubs = _items(rng, n_pubs)
    subs = _items(rng, n_subs)
    expected = oracle(pubs, subs)
    whole_store.add_publications(pubs)
    whole_store.add_subscriptions(subs)
    try:
        assert whole_store.match_disjuncts("all") == expected
        assert whole_store.match_disjuncts("publications", [0]) == {
            q for q in expected if q[0] == 0
        }
        assert whole_store.match_disjuncts("subscriptions", [0]) == {
            q for q in expected if q[2] == 0
        }
    finally:
        whole_store.delete_publications([i for i, _ in pubs])
        whole_store.delete_subscriptions([i for i, _ in subs])


def test_wildcards_are_counted_as_a_kind_and_uncounted_when_deleted(
    make_store: MakeStore, pg: psycopg.Connection[Any]
) -> None:
    # Without a wildcard anywhere the statement reads no shape; with one it must cover
    store = make_store("range")
    store.add_publications([(1, matching.parse("a = 1 AND b = 2"))])
    store.add_subscriptions([(1, matching.parse("a = 1 AND b <= 5"))])
    assert store.match_publications([1]) == {(1, 1)}
    store.add_subscriptions(
        [(2, matching.parse("a = 1 AND int b = *")), (3, matching.parse("int a = * AND int b = *"))]
    )
    assert store.match_publications([1]) == {(1, 1), (1, 2), (1, 3)}

    def wildcards() -> list[tuple[str, str, int]]:
        with pg.cursor() as cur:
            cur.execute(
                f"SELECT type, side, n FROM {store.q('used_operators')} WHERE op = '*' ORDER BY 1"
            )
            return cur.fetchall()

    assert wildcards() == [("int", "sub", 3)]
    store.delete_subscriptions([3])
    assert wildcards() == [("int", "sub", 1)]
    assert store.match_publications([1]) == {(1, 1), (1, 2)}
    store.delete_subscriptions([2])
    assert wildcards() == []
    assert store.match_publications([1]) == {(1, 1)}
    assert store.match_subscriptions([1]) == {(1, 1)}
