"""A family's best entry inside a key range (``Family.best_in``, a new watch's first answer)
against the brute force over its entries, while offers come, move and go."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from matching.dissemination.offers import Family
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
