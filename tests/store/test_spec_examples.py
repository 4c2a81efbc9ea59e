"""The worked examples of SPEC 3.3 through both PostgreSQL strategies, and Figure 3."""

from __future__ import annotations

import pytest

import matching
from matching.store import PaperStore
from tests.store.conftest import MakeStore

OFFER = "topic = 'pencils' AND lot BETWEEN 1000 AND 10000 AND price = 1.00"

SPEC_3_3 = [
    ("x = 1", "x = 1 AND y = 1", True),
    ("x = 1 AND y = 1", "x = 1", False),
    ("x < 1", "x < 2", True),
    ("x < 2", "x < 1", True),  # "and also with the roles swapped"
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


@pytest.mark.parametrize("strategy", ["paper", "range"])
@pytest.mark.parametrize(("publication", "subscription", "match"), SPEC_3_3)
def test_spec_3_3_row(
    make_store: MakeStore, strategy: str, publication: str, subscription: str, match: bool
) -> None:
    store = make_store(strategy)
    store.add_publications([(1, matching.parse(publication))])
    store.add_subscriptions([(2, matching.parse(subscription))])

    expected = {(1, 2)} if match else set()
    assert store.match_all() == expected
    assert store.match_publications([1]) == expected
    assert store.match_subscriptions([2]) == expected


def test_figure_3_intermediate_answer(make_store: MakeStore) -> None:
    # Given the subscriptions of the paper's Figure 1 and the publication of Figure 2
    store = make_store("paper")
    assert isinstance(store, PaperStore)
    store.add_subscriptions(
        [(1, matching.parse("x < 6 AND y = 3")), (2, matching.parse("x < 4 AND y < 2"))]
    )
    store.add_publications([(3, matching.parse("x < 5 AND y = 1"))])

    # When publication 3 is matched
    assert store.match_publications([3]) == {(3, 2)}

    # Then the intermediate answer holds exactly the three rows of Figure 3
    assert sorted(store.intermediate_answer()) == sorted(
        [(3, 0, 2, 0, "y", 1), (3, 0, 1, 0, "x", 1), (3, 0, 2, 0, "x", 1)]
    )
    # And so after a match from scratch
    assert store.match_all() == {(3, 2)}
    assert len(store.intermediate_answer()) == 3
