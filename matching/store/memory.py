"""The ``memory`` strategy: the plain-Python oracle of SPEC 3 behind the store interface.

It compares every pair, so it is meant for small inputs and as the reference the
PostgreSQL strategies are tested against. No database is involved.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from matching.model import Constraint
from matching.semantics import matching_disjunct_pairs

from .base import ConstraintStore, DisjunctPair, Item, StoreError, check_ids


class MemoryStore(ConstraintStore):
    strategy = "memory"

    def __init__(self) -> None:
        self._pubs: dict[int, Constraint] = {}
        self._subs: dict[int, Constraint] = {}

    def drop(self) -> None:
        self._pubs.clear()
        self._subs.clear()

    def add_publications(self, items: Iterable[Item]) -> int:
        return _add(self._pubs, items)

    def add_subscriptions(self, items: Iterable[Item]) -> int:
        return _add(self._subs, items)

    def delete_publications(self, ids: Iterable[int]) -> None:
        for i in check_ids(ids):
            self._pubs.pop(i, None)

    def delete_subscriptions(self, ids: Iterable[int]) -> None:
        for i in check_ids(ids):
            self._subs.pop(i, None)

    def _match(
        self, scope: Literal["all", "publications", "subscriptions"], ids: list[int]
    ) -> set[DisjunctPair]:
        pubs, subs = self._pubs, self._subs
        if scope == "publications":
            pubs = {i: pubs[i] for i in ids if i in pubs}
        elif scope == "subscriptions":
            subs = {i: subs[i] for i in ids if i in subs}
        return {
            (p, i, s, j)
            for p, pc in pubs.items()
            for s, sc in subs.items()
            for i, j in matching_disjunct_pairs(pc, sc)
        }


def _add(table: dict[int, Constraint], items: Iterable[Item]) -> int:
    new: dict[int, Constraint] = {}
    for i, constraint in items:
        check_ids([i])
        if i in table or i in new:
            raise StoreError(f"id {i} is already in the store")
        new[i] = constraint
    table.update(new)
    return len(new)
