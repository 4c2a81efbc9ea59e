"""The Spark batch matcher equals the oracle (SPEC 3) on every type, wildcards on both sides."""

from __future__ import annotations

import random
from typing import Any

import matching
from matching.spark import encode_items, encode_texts, match, match_disjuncts
from matching.store import MemoryStore
from tests.store.generate import constraints, predicate

Quad = tuple[int, int, int, int]


def oracle(pubs: list[tuple[int, Any]], subs: list[tuple[int, Any]]) -> set[Quad]:
    memory = MemoryStore()
    memory.add_publications(pubs)
    memory.add_subscriptions(subs)
    return memory.match_disjuncts("all")


def spark_quads(
    spark: Any, pubs: list[tuple[int, Any]], subs: list[tuple[int, Any]], buckets: int
) -> set[Quad]:
    rows = match_disjuncts(encode_items(spark, pubs), encode_items(spark, subs), buckets=buckets)
    return {(r.pub_id, r.pub_dj, r.sub_id, r.sub_dj) for r in rows.collect()}


def _wildcarded(rng: random.Random, *, max_predicates: int) -> str:
    """Like the store's generator, with a wildcard for about every third predicate."""

    def one() -> str:
        text = predicate(rng)
        words = text.split(" ")
        if words[0] != "NOT" and rng.random() < 0.35:
            return f"{words[0]} {words[1]} = *"
        return text

    disjuncts = rng.randint(1, 3) if rng.random() < 0.3 else 1
    parts = [
        " AND ".join(one() for _ in range(rng.randint(1, max_predicates))) for _ in range(disjuncts)
    ]
    return " OR ".join(f"({p})" for p in parts)


def test_generated_workloads_equal_the_oracle_at_disjunct_level(spark: Any) -> None:
    # Given random constraints over every type and operator (points, boxes, disjunctions,
    # negations, wildcards on both sides) in small domains, so that many pairs match
    rng = random.Random(20261122)
    pubs = [(i, c) for i, (_, c) in enumerate(constraints(rng, 250, max_predicates=2))]
    pubs += [
        (i, c)
        for i, (_, c) in enumerate(
            constraints(rng, 100, max_predicates=3, text=_wildcarded), start=len(pubs)
        )
    ]
    subs = [(i, c) for i, (_, c) in enumerate(constraints(rng, 250, max_predicates=4))]
    subs += [
        (i, c)
        for i, (_, c) in enumerate(
            constraints(rng, 100, max_predicates=5, text=_wildcarded), start=len(subs)
        )
    ]
    expected = oracle(pubs, subs)
    assert len({(q[0], q[2]) for q in expected}) > 10_000  # of 122,500 pairs

    # When Spark matches them without buckets and with them
    encoded = encode_items(spark, pubs), encode_items(spark, subs)
    for buckets in (1, 8):
        rows = match_disjuncts(*encoded, buckets=buckets).collect()
        got = [(r.pub_id, r.pub_dj, r.sub_id, r.sub_dj) for r in rows]

        # Then it finds exactly the oracle's disjunct pairs, each once
        assert len(got) == len(set(got)), buckets
        assert set(got) == expected, buckets


# SPEC 3.3, the worked examples (the oracle's own test has the same rows).
OFFER = "topic = 'pencils' AND lot BETWEEN 1000 AND 10000 AND price = 1.00"
SPEC_3_3 = [
    ("x = 1", "x = 1 AND y = 1", True),
    ("x = 1 AND y = 1", "x = 1", False),
    ("x < 1", "x < 2", True),
    ("x < 2", "x < 1", True),
    ("x < 5 AND y = 1", "x < 6 AND y = 3", False),
    ("x < 5 AND y = 1", "x < 4 AND y < 2", True),
    ("int x = 5", "int x < 7", True),
    ("double x = 5.0", "int x < 7", False),
    (OFFER, "topic = 'pencils' AND lot IN [2000, 5000] AND price <= 1.10", True),
    (OFFER, "topic = 'pencils' AND lot IN [2000, 5000] AND price <= 0.95", False),
    (OFFER, "topic = 'pencils' AND price <= 1.10", False),
    (OFFER, "topic = 'pencils' AND int lot = * AND price <= 1.10", True),
    ("b = BOX(0, 0, 1, 1)", "b OVERLAPS BOX(1, 1, 2, 2)", True),
]


def test_spec_3_3_worked_examples(spark: Any) -> None:
    # Each example is its own publication and subscription, so the pairs of one batch are
    # exactly the examples that match (plus cross-example matches, which the oracle knows).
    pubs = [(i, matching.parse(p)) for i, (p, _, _) in enumerate(SPEC_3_3)]
    subs = [(i, matching.parse(s)) for i, (_, s, _) in enumerate(SPEC_3_3)]
    got = {
        (r.pub_id, r.sub_id)
        for r in match(encode_items(spark, pubs), encode_items(spark, subs)).collect()
    }

    for i, (_, _, expected) in enumerate(SPEC_3_3):
        assert ((i, i) in got) is expected, SPEC_3_3[i]
    assert got == {(q[0], q[2]) for q in oracle(pubs, subs)}


# Values at the edges of the encoding: (publication, subscription, match).
EDGES = [
    # decimals beyond any DecimalType (38 digits), up to the language's 40, compared exactly
    ("p = 0.1" + "0" * 38 + "1", "p > 0.1", True),
    ("p = 0.1", "p > 0.1" + "0" * 38 + "1", False),
    ("decimal p = -" + "9" * 40, "decimal p < -" + "1" + "0" * 39, True),
    ("decimal p = -" + "1" + "0" * 39, "decimal p < -" + "9" * 40, False),
    # open and closed bounds that touch, on dense and discrete types
    ("p < 1.5", "p >= 1.5", False),
    ("p <= 1.5", "p >= 1.50", True),
    ("int x IN (3, 5)", "int x = 4", True),
    ("int x < 4", "int x > 3", False),
    ("d > DATE '2026-01-02'", "d < DATE '2026-01-04'", True),
    ("d > DATE '2026-01-02'", "d < DATE '2026-01-03'", False),
    # timestamps are instants, whatever the zone they are written in
    ("t = TIMESTAMP '2026-01-01T12:00:00+02:00'", "t = TIMESTAMP '2026-01-01T10:00:00Z'", True),
    ("t > TIMESTAMP '2026-01-01T12:00:00+02:00'", "t <= TIMESTAMP '2026-01-01T10:00:00Z'", False),
    ("f = -0.0e0", "f >= 0e0", True),
    ("f < -1e-300", "f >= -1e-300", False),
    # strings by code point (U+1F600 is above U+FFFD, unlike in UTF-16)
    ("s = '\U0001f600'", "s > '\ufffd'", True),
    ("s = ''", "s < 'a'", True),
    ("s > 'a'", "s < 'a\x01'", True),
    ("s > 'a'", "s <= 'a'", False),
]


def test_edge_values(spark: Any) -> None:
    # Given each example as publication i and subscription i, in one batch
    for pub, sub, expected in EDGES:
        assert matching.matches(pub, sub) is expected, (pub, sub)  # the oracle agrees
    pubs = [(i, matching.parse(p)) for i, (p, _, _) in enumerate(EDGES)]
    subs = [(i, matching.parse(s)) for i, (_, s, _) in enumerate(EDGES)]

    # When Spark matches the batch
    rows = match(encode_items(spark, pubs), encode_items(spark, subs), buckets=4).collect()
    got = {(r.pub_id, r.sub_id) for r in rows}

    # Then each example comes out as expected, and so does every pair across examples
    for i, (pub, sub, expected) in enumerate(EDGES):
        assert ((i, i) in got) is expected, (pub, sub)
    assert got == {(q[0], q[2]) for q in oracle(pubs, subs)}


def test_a_subscription_of_wildcards_matches_through_shapes_alone(spark: Any) -> None:
    # Given publications on lot and price, and subscriptions that are wildcards on both
    pubs = [(i, matching.parse(f"lot = {i} AND price = 1.00")) for i in range(20)]
    subs = [
        (0, matching.parse("int lot = * AND decimal price = *")),
        (1, matching.parse("int lot = * AND decimal price = * AND string topic = *")),
        (2, matching.parse("int lot = *")),  # says nothing about price: no match
        (3, matching.parse("int lot = * AND price <= 0.50")),  # one hit needed, none found
    ]
    encoded_subs = encode_items(spark, subs)

    # Then the wildcard subscriptions have no predicate rows at all ...
    assert encoded_subs.predicates.select("id").distinct().collect() == [(3,)]
    # ... and still match every publication they should
    got = {(r.pub_id, r.sub_id) for r in match(encode_items(spark, pubs), encoded_subs).collect()}
    assert got == {(i, s) for i in range(20) for s in (0, 1)}


def test_texts_in_a_dataframe_are_parsed_on_the_executors(spark: Any) -> None:
    pubs = spark.createDataFrame(
        [(1, "x = 1"), (2, "x = 1 AND y = 1"), (3, "x < 5 AND y = 1")], "id long, constraint string"
    )
    subs = spark.createDataFrame(
        [(10, "x = 1 AND y = 1"), (11, "x < 4 AND y < 2"), (12, "x = 9")],
        "id long, constraint string",
    )

    got = sorted(tuple(r) for r in match(encode_texts(pubs), encode_texts(subs)).collect())

    assert got == [(1, 10), (1, 11), (2, 10), (2, 11), (3, 10), (3, 11)]
