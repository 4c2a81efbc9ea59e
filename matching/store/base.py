"""The interface every constraint store offers, whatever its match strategy.

A store holds publications and subscriptions, each a normalized ``Constraint``
under a caller-chosen integer id (a PostgreSQL ``bigint``), and answers which of
them match (SPEC 3.1). Matching comes in three scopes:

* ``match_all``: every publication against every subscription, from scratch;
* ``match_publications(ids)``: a batch of publications (seed 000, section 6.1)
  against every subscription, the incremental step after publishing;
* ``match_subscriptions(ids)``: a batch of subscriptions against every publication.

Each returns ``(publication id, subscription id)`` pairs; ``match_disjuncts(scope, ids)``
gives the ``(pub id, pub disjunct, sub id, sub disjunct)`` quadruples behind any scope's
pairs (a disjunct is numbered by its position in ``Constraint.disjuncts``), which is what
pricing a match needs.

Stores never commit a transaction the caller opened (see ``DatabaseStore``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Literal

from matching.model import Constraint

Pair = tuple[int, int]
"""``(publication id, subscription id)``."""

DisjunctPair = tuple[int, int, int, int]
"""``(publication id, publication disjunct, subscription id, subscription disjunct)``."""

Item = tuple[int, Constraint]
"""An id and its constraint, as stores take them."""

INT8_MIN = -(2**63)
INT8_MAX = 2**63 - 1


class StoreError(Exception):
    """A request the store cannot carry out (a bad namespace, an unknown strategy, ...)."""


class StoreLimitError(StoreError, ValueError):
    """A valid constraint with a field or value too large for the store's indexes."""


def pairs_of(quads: Iterable[DisjunctPair]) -> set[Pair]:
    """The constraint-level pairs behind disjunct-level matches."""
    return {(q[0], q[2]) for q in quads}


def check_ids(ids: Iterable[int]) -> list[int]:
    """The ids as a list, each checked to be an int that fits a ``bigint``."""
    result = list(ids)
    for i in result:
        if type(i) is not int or not INT8_MIN <= i <= INT8_MAX:
            raise StoreError(f"ids are integers that fit in a bigint, not {i!r}")
    return result


class ConstraintStore(ABC):
    """Publications and subscriptions, and who matches whom."""

    strategy: str = ""

    # -- lifecycle ----------------------------------------------------------------------

    def create(self, *, indexes: bool = True) -> None:
        """Create what the store needs (a no-op where there is nothing to create); without
        ``indexes``, its secondary indexes wait for ``create_indexes``."""
        return None

    def create_indexes(self) -> None:
        """Build the secondary indexes that ``create(indexes=False)`` left out."""
        return None

    def drop(self) -> None:
        """Remove the store and everything in it."""
        return None

    def analyze(self) -> None:
        """Refresh the planner statistics after a large change."""
        return None

    def close(self) -> None:
        """Release what the store owns (a connection it opened itself)."""
        return None

    def __enter__(self) -> ConstraintStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def defer_counters(self) -> None:
        """From now on, write this store's shared counters only at ``flush_counters``
        (where a store keeps some; see ``RangeStore.defer_counters``)."""
        return None

    def flush_counters(self) -> None:
        """Write the counters deferred since ``defer_counters``."""
        return None

    # -- contents -----------------------------------------------------------------------

    @abstractmethod
    def add_publications(self, items: Iterable[Item]) -> int:
        """Store publications under new ids; returns how many were added."""

    @abstractmethod
    def add_subscriptions(self, items: Iterable[Item]) -> int:
        """Store subscriptions under new ids; returns how many were added."""

    def bulk_load(
        self, *, publications: Iterable[Item] = (), subscriptions: Iterable[Item] = ()
    ) -> None:
        """Load many constraints at once (possibly faster than ``add_*``), then analyze."""
        self.add_publications(publications)
        self.add_subscriptions(subscriptions)
        self.analyze()

    @abstractmethod
    def delete_publications(self, ids: Iterable[int]) -> None:
        """Forget these publications (unknown ids are ignored)."""

    @abstractmethod
    def delete_subscriptions(self, ids: Iterable[int]) -> None:
        """Forget these subscriptions (unknown ids are ignored)."""

    # -- matching -----------------------------------------------------------------------

    @abstractmethod
    def _match(
        self, scope: Literal["all", "publications", "subscriptions"], ids: list[int]
    ) -> set[DisjunctPair]:
        """The matching disjunct pairs of the scope (``ids`` is empty for ``all``)."""

    def match_disjuncts(
        self, scope: Literal["all", "publications", "subscriptions"], ids: Iterable[int] = ()
    ) -> set[DisjunctPair]:
        """The ``(pub id, pub disjunct, sub id, sub disjunct)`` quadruples behind a scope's
        pairs: every match for ``all`` (``ids`` unused), else the batch ``ids`` of that side
        against the whole other side; an empty batch matches nothing without asking the
        backend."""
        if scope == "all":
            return self._match("all", [])
        batch = check_ids(ids)
        return self._match(scope, batch) if batch else set()

    def match_all(self) -> set[Pair]:
        """Every matching pair, computed from scratch."""
        return pairs_of(self.match_disjuncts("all"))

    def match_publications(self, ids: Iterable[int]) -> set[Pair]:
        """The matches of these publications (one batch) against every subscription."""
        return pairs_of(self.match_disjuncts("publications", ids))

    def match_subscriptions(self, ids: Iterable[int]) -> set[Pair]:
        """The matches of these subscriptions (one batch) against every publication."""
        return pairs_of(self.match_disjuncts("subscriptions", ids))
