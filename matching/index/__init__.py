"""The matching index of SPEC 8.2 (seed 004's matching tree). Plain Python, no Django.

``MatchingIndex`` holds stateless subscriptions (a subject pattern and equality, presence
and range tests) and answers, for one event, exactly the set of those it matches;
``choose_order`` picks the tree's attribute order from the subscriptions. ``form1`` reads
SPEC 8.3 form 1 queries into it, with a residual check for the conjuncts the tree cannot
hold.
"""

from .form1 import Split, add_query, narrow, split_conditions
from .tree import Entry, IndexEntryError, MatchingIndex, choose_order

__all__ = [
    "Entry",
    "IndexEntryError",
    "MatchingIndex",
    "Split",
    "add_query",
    "choose_order",
    "narrow",
    "split_conditions",
]
