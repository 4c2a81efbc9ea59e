"""The ``paper`` strategy's own pieces: the generator, operator tracking, the tables."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

import matching
from matching.model import Type
from matching.store import PaperStore
from matching.store.rules import (
    BOX_RELATIONS,
    ORDERED_OPERATORS,
    PUB_INSIDE,
    SUB_INSIDE,
    condition,
    intermediate_query,
)
from tests.store.conftest import MakeStore


def test_the_generator_writes_the_papers_example_condition() -> None:
    # The paper's example: publications "<" against subscriptions ">=" need p.val > s.val.
    assert condition(Type.INT, "<", ">=") == "s.val < p.val"
    assert condition(Type.INT, "=", "=") == "p.val = s.val"
    assert condition(Type.INT, "[)", "(]") == "p.val <= s.val2 AND s.val < p.val2"
    assert condition(Type.INT, "<", "<=") == "TRUE"
    assert condition(Type.STRING, "*", "=") == "TRUE"


def test_one_query_per_combination_with_its_operators() -> None:
    query = intermediate_query("ns", Type.DECIMAL, "<=", "[]", "publications")
    assert query.startswith('INSERT INTO "ns".intermediate_answer')
    assert 'FROM "ns".decimal_pubs p JOIN "ns".decimal_subs s ON p.field = s.field' in query
    assert "p.op = '<=' AND s.op = '[]'" in query
    assert "s.val <= p.val" in query
    assert "p.p_id = ANY(%(ids)s::int8[])" in query


def test_the_box_rules_are_the_spec_table_made_symmetric() -> None:
    assert len(BOX_RELATIONS) == 16
    for (a, b), relation in BOX_RELATIONS.items():
        mirrored = {PUB_INSIDE: SUB_INSIDE, SUB_INSIDE: PUB_INSIDE}.get(relation, relation)
        assert BOX_RELATIONS[(b, a)] == mirrored
    assert set(ORDERED_OPERATORS) == {"=", "<", "<=", ">", ">=", "[]", "[)", "(]", "()", "*"}


def _used(pg: psycopg.Connection[Any], store: PaperStore) -> set[tuple[str, str, str, int]]:
    with pg.cursor() as cur:
        cur.execute(f"SELECT type, side, op, n FROM {store.q('used_operators')}")
        return set(cur.fetchall())


def test_used_operators_follow_inserts_and_deletes(
    make_store: MakeStore, pg: psycopg.Connection[Any]
) -> None:
    store = make_store("paper")
    assert isinstance(store, PaperStore)
    store.add_publications(
        [(1, matching.parse("x < 5 AND y = 1")), (2, matching.parse("int x = * OR x = 2"))]
    )
    store.add_subscriptions([(7, matching.parse("x > 1.5"))])
    assert _used(pg, store) == {
        ("int", "pub", "<=", 1),
        ("int", "pub", "=", 2),
        ("int", "pub", "*", 1),
        ("decimal", "sub", ">", 1),
    }
    # No int subscription and no decimal publication: no combination, no query, no match
    with pg.cursor() as cur:
        assert store.combinations(cur) == []
    assert store.match_all() == set()

    store.delete_publications([2])
    assert _used(pg, store) == {
        ("int", "pub", "<=", 1),
        ("int", "pub", "=", 1),
        ("decimal", "sub", ">", 1),
    }
    store.add_subscriptions([(8, matching.parse("x IN [0, 3) AND int y = *"))])
    with pg.cursor() as cur:
        assert set(store.combinations(cur)) == {
            (Type.INT, "<=", "[]"),
            (Type.INT, "<=", "*"),
            (Type.INT, "=", "[]"),
            (Type.INT, "=", "*"),
        }
    assert store.match_all() == {(1, 8)}


def test_predicates_are_stored_as_in_figures_1_and_2(
    make_store: MakeStore, pg: psycopg.Connection[Any]
) -> None:
    store = make_store("paper")
    store.add_subscriptions(
        [(1, matching.parse("x < 6 AND y = 3")), (2, matching.parse("x < 4 AND y < 2"))]
    )
    with pg.cursor() as cur:
        cur.execute(
            f"SELECT s_id, s_disjunct_id, field, val, op FROM {store.q('int_subs')}"
            " ORDER BY s_id, field"
        )
        # The language normalizes x < 6 on ints to x <= 5: the paper's rows, canonically.
        assert cur.fetchall() == [
            (1, 0, "x", 5, "<="),
            (1, 0, "y", 3, "="),
            (2, 0, "x", 3, "<="),
            (2, 0, "y", 1, "<="),
        ]
        cur.execute(f"SELECT id, disjunct_id, count FROM {store.q('sub_master')} ORDER BY id")
        assert cur.fetchall() == [(1, 0, 2), (2, 0, 2)]


@pytest.mark.parametrize("strategy", ["paper", "range"])
def test_the_final_aggregation_counts_whole_disjuncts(make_store: MakeStore, strategy: str) -> None:
    # Grouped by field as well, as in the paper's printed query, each group would sum
    # to 1 and never equal the disjunct's count of 2: the match would be missed.
    store = make_store(strategy)
    store.add_publications([(1, matching.parse("x = 1 AND y = 1"))])
    store.add_subscriptions(
        [(2, matching.parse("x = 1 AND y = 1")), (3, matching.parse("x = 1 AND y = 2"))]
    )
    assert store.match_all() == {(1, 2)}
