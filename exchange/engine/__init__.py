"""The exchange's view of the matching engine, split by what each part does.

* ``store``: which constraint store the exchange uses and how it is opened on Django's
  connection (so a cycle updates the store, the best-offer table and the outbox in one
  transaction);
* ``constraints``: an order's stored constraint, checked before the engine uses it, so
  that one order whose stored text no longer parses or fits cannot stop a cycle;
* ``candidates``: the weaker constraints the store indexes to find candidate pairs, and
  the filter that keeps the pairs that match on the full constraints;
* ``pricing``: the value of a matching pair and the agreement a trade records.

The names below are the ones the rest of the exchange uses.
"""

from .candidates import candidate_constraint, candidate_of, candidate_pairs
from .constraints import (
    UnusableOrder,
    UnusableOrders,
    Usable,
    order_constraints,
    orders_read,
    orders_usable,
    usable_constraint,
)
from .pricing import pair_agreements, pair_value, pair_values, price_interval
from .store import STRATEGIES, namespace, scratch_store, store, strategy

__all__ = [
    "STRATEGIES",
    "UnusableOrder",
    "UnusableOrders",
    "Usable",
    "candidate_constraint",
    "candidate_of",
    "candidate_pairs",
    "namespace",
    "order_constraints",
    "orders_read",
    "orders_usable",
    "pair_agreements",
    "pair_value",
    "pair_values",
    "price_interval",
    "scratch_store",
    "store",
    "strategy",
    "usable_constraint",
]
