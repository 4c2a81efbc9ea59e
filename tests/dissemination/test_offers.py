"""A family's best entry inside a key range (``Family.best_in``, a new watch's first answer)
against the brute force over its entries, while offers come, move and go."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from matching.dissemination.offers import _BOTTOM, _TOP, Family, _KeyLine
from matching.index.intervals import Span
from tests.dissemination.test_estimate import ASKS, KEYS, NAME, entry
from tests.matching.subscriptions.test_form4_intervals import inside, nonempty, spans

moves = st.lists(
    st.tuples(
        st.integers(1, 12),  # the offer
        st.one_of(st.none(), st.tuples(st.sampled_from(KEYS), st.sampled_from(ASKS))),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(moves, st.lists(spans(), max_size=6)), max_size=6))
def test_the_best_entry_in_a_range_is_the_brute_forces_after_every_change(rounds):
    family = Family(NAME)
    for changes, ranges in rounds:
        for offer, terms in changes:
            family.put(offer, None if terms is None else entry(offer, *terms))
        for span in ranges:
            # the lowest (ask, offer) among the entries whose key lies in the span
            held = [
                e
                for e in family.entries.values()
                if nonempty(span) and inside(Span.point(e.key), span)
            ]
            best = min(held, key=lambda e: e.rank, default=None)
            assert family.best_in(span) == (None if best is None else best.answer)


# The nearest better entries (``Family._nearest_better``) and the ordered pairs they are
# found in (``_KeyLine``, blocks with their best ranks) against a plain scan of a sorted list.
# Small loads make the blocks split and merge within a few dozen pairs.

loads = st.integers(2, 5)
ranks = st.tuples(st.sampled_from(ASKS).map(Decimal), st.integers(1, 6))
# duplicate pairs and one rank at several keys: a family has neither, the pairs allow both
pairs = st.tuples(st.sampled_from(KEYS).map(Decimal), ranks)
bounds = st.one_of(
    st.none(),
    pairs,
    st.tuples(st.sampled_from(KEYS).map(Decimal), st.sampled_from([_TOP, _BOTTOM])),
)


def brute_nearest(held: list, at, rank, offer) -> tuple:
    """The first pair better than ``rank`` and not ``offer``'s going down from ``(at, _TOP)``
    and going up from ``(at, _BOTTOM)``, read off the whole sorted list."""
    better = [(key, r) for key, r in sorted(held) if r < rank and r[1] != offer]
    below = [key for key, r in better if (key, r) <= (at, _TOP)]
    above = [key for key, r in better if (key, r) >= (at, _BOTTOM)]
    return (below[-1] if below else None, above[0] if above else None)


def check_blocks(line: _KeyLine) -> None:
    """The blocks' invariants: in order, none empty or too big, their lasts and bests right."""
    assert [p for block in line.blocks for p in block] == sorted(line)
    assert all(0 < len(block) <= 2 * line.load for block in line.blocks)
    if len(line.blocks) > 1:
        assert all(len(block) >= line.load // 2 for block in line.blocks)
    assert line.lasts == [block[-1] for block in line.blocks]
    assert line.bests == [min(r for _, r in block) for block in line.blocks]


@settings(max_examples=300, deadline=None)
@given(
    loads,
    st.lists(st.tuples(st.booleans(), pairs, st.integers(0, 99)), max_size=80),
    st.lists(st.tuples(st.sampled_from(KEYS).map(Decimal), ranks, st.integers(0, 7)), max_size=8),
    st.lists(st.tuples(bounds, bounds, st.booleans()), max_size=4),
    st.randoms(use_true_random=False),
)
def test_the_key_line_holds_the_pairs_in_order_and_finds_the_nearest_better(
    load, changes, queries, ranges, rnd
):
    line, held = _KeyLine(load), SortedList()

    def change(add, pair):
        if add:
            line.add(pair)
            held.add(pair)
        else:
            line.remove(pair)
            held.remove(pair)
        check_blocks(line)
        assert list(line) == list(held) and len(line) == len(held)

    # an addition, or the removal of a held pair (picked by its place)
    for add, pair, place in changes:
        change(add or not held, pair if add or not held else held[place % len(held)])
    # a pair not held is refused, and nothing changes
    missing = (Decimal(9), (Decimal(9), 9))
    with pytest.raises(ValueError):
        line.remove(missing)
    assert list(line) == list(held)
    for at, rank, offer in queries:
        assert line.nearest_better(at, rank, offer) == brute_nearest(list(held), at, rank, offer)
    # every held pair's own query, as ``Family.put`` asks them
    for at, rank in held:
        for offer in (rank[1], 0):
            assert line.nearest_better(at, rank, offer) == brute_nearest(
                list(held), at, rank, offer
            )
    # bounds drawn, and bounds that are held pairs (each included)
    for pair in held:
        ranges += [(pair, None, False), (None, pair, True), (pair, pair, False)]
    for minimum, maximum, reverse in ranges:
        assert list(line.irange(minimum, maximum, reverse)) == list(
            held.irange(minimum, maximum, reverse=reverse)
        )
    # and every pair removed in some order: the blocks merge down to none
    for pair in rnd.sample(list(held), len(held)):
        change(False, pair)
    assert line.blocks == line.lasts == line.bests == []


class Scanned(Family):
    """The family as it was before the blocks: a SortedList of its pairs, walked from the key
    to either end for the nearest better entries."""

    def __init__(self, name):
        super().__init__(name)
        self.by_key = SortedList()

    def _nearest_better(self, at, rank, offer):
        return brute_nearest(list(self.by_key), at, rank, offer)


@settings(max_examples=300, deadline=None)
@given(loads, moves, st.lists(st.tuples(st.integers(1, 12), st.sampled_from(KEYS)), max_size=20))
def test_every_change_gives_the_delta_of_the_plain_scan(load, changes, rising):
    """Random moves, then rising bids: each a new best, at its key or moved to another."""
    family, scanned = Family(NAME), Scanned(NAME)
    family.by_key = _KeyLine(load)
    best = Decimal("0.90")
    for offer, key in rising:
        best -= Decimal("0.01")
        changes.append((offer, (key, str(best))))
    for offer, terms in changes:
        new = None if terms is None else entry(offer, *terms)
        assert family.put(offer, new) == scanned.put(offer, new)
        assert list(family.by_key) == list(scanned.by_key)
        check_blocks(family.by_key)


def test_a_key_line_refuses_a_load_under_2():
    # with a load of 1 a block left empty would not be merged away
    with pytest.raises(ValueError):
        _KeyLine(1)
