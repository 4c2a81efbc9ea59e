"""Getting form 4's range watches' new answers to the processes that hold them (SPEC 8.3's
dissemination paragraph, issue 21, seed 002). Plain Python, no Django: ``offers`` turns a
change to the open offers into a ``Delta`` (what a change does to one family of watches),
``watchset`` finds the watches a delta affects through an interval index and gives their
new answers, ``strategies`` carries deltas to consumers in three ways (enumerate, relax,
reformulate) and ``optimizer`` picks one per change by estimated cost. See
``docs/dissemination.md``.
"""

from .offers import Delta, Entry, FamilyName, OfferBook, family_of
from .optimizer import Costs, Estimate, Optimizer
from .strategies import STRATEGIES, Consumer, Notification, Producer
from .watchset import WatchSet

__all__ = [
    "STRATEGIES",
    "Consumer",
    "Costs",
    "Delta",
    "Entry",
    "Estimate",
    "FamilyName",
    "Notification",
    "OfferBook",
    "Optimizer",
    "Producer",
    "WatchSet",
    "family_of",
]
