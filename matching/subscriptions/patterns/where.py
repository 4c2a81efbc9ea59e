"""The ``WHERE``s of patterns that share one automaton, read together (issue 20).

Patterns equal but for their ``WHERE`` share one automaton (``multi.py``); each instance
it completes must then be checked against every member's ``WHERE``. When those are
``E op L`` with the same expression ``E`` and operator and a number or duration literal
``L`` ("prices rising for at least D minutes": ``DUR >= 5m``, ``DUR >= 30m``, ...), ``E``
is computed once per instance and the members it passes are found by bisection over the
members sorted by ``L``: ``E >= L`` holds for the ``L`` up to ``E``. Any other ``WHERE``
is checked member by member, as before.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .automaton import REVERSED, Automaton, Getter, Instance, compile_expr
from .model import Compare, Duration, Expr, Literal

Completed = tuple[tuple[int, ...], Instance]


@dataclass(eq=False)
class _Bucket:
    """The members whose ``WHERE`` is ``expr op L``, sorted by ``L`` (``limits``)."""

    expr: Getter
    op: str
    limits: list[tuple[Decimal, int]] = field(default_factory=list)  # (L, rank)
    members: list[Any] = field(default_factory=list)  # in the order of ``limits``


def _split(where: Any) -> tuple[Expr, str, Decimal] | None:
    """``(E, op, L)`` for a ``WHERE`` comparing an expression with a number or duration
    literal, written with ``E`` on the left."""
    if not isinstance(where, Compare):
        return None
    for expr, literal, op in ((where.left, where.right, where.op),
                              (where.right, where.left, REVERSED.get(where.op, where.op))):  # fmt: skip
        if isinstance(literal, Duration):
            return expr, op, Decimal(literal.seconds)
        if isinstance(literal, Literal) and isinstance(literal.value, Decimal):
            return expr, op, literal.value
    return None


class WhereIndex:
    """The members of one shared automaton (``payload``: what the caller holds each by,
    ``rank``: the order they are pushed in), by ``WHERE``."""

    def __init__(self, aliases: tuple[str, ...]) -> None:
        self.aliases = aliases
        self._buckets: dict[tuple[Expr, str], _Bucket] = {}
        self._others: dict[Any, Automaton] = {}  # payload -> its automaton (any WHERE)
        self._where: dict[Any, tuple[_Bucket, tuple[Decimal, int]]] = {}

    def add(self, payload: Hashable, automaton: Automaton, rank: int) -> None:
        found = _split(automaton.pattern.where)
        if found is None:
            self._others[payload] = automaton
            return
        expr, op, limit = found
        bucket = self._buckets.get((expr, op))
        if bucket is None:
            bucket = self._buckets[(expr, op)] = _Bucket(compile_expr(expr, self.aliases, None), op)
        key = (limit, rank)
        i = bisect.bisect_left(bucket.limits, key)
        bucket.limits.insert(i, key)
        bucket.members.insert(i, payload)
        self._where[payload] = (bucket, key)

    def remove(self, payload: Hashable) -> None:
        if self._others.pop(payload, None) is not None:
            return
        bucket, key = self._where.pop(payload)
        i = bisect.bisect_left(bucket.limits, key)
        del bucket.limits[i], bucket.members[i]

    def passing(
        self, completed: list[Completed]
    ) -> tuple[dict[Any, list[Completed]], dict[Any, Exception]]:
        """Per member, the instances of ``completed`` (in order) its ``WHERE`` passes,
        members that none passes left out; and the members whose ``WHERE`` raised on
        one of them (alone, such a pattern fails on the event)."""
        out: dict[Any, list[Completed]] = {}
        failed: dict[Any, Exception] = {}
        for payload, automaton in self._others.items():
            try:
                mine = automaton.passing(completed)
            except Exception as exc:  # that member fails, the others go on
                failed[payload] = exc
                continue
            if mine:
                out[payload] = mine
        for bucket in self._buckets.values():
            if not bucket.members:
                continue
            for c in completed:
                try:
                    v = bucket.expr(c[1], None)
                except Exception as exc:  # every member of the bucket raises
                    failed.update(dict.fromkeys(bucket.members, exc))
                    break
                if v is None:
                    continue  # a comparison with an absent value is false
                for payload in _met(bucket, v):
                    found = out.get(payload)
                    if found is None:
                        out[payload] = [c]
                    else:
                        found.append(c)
        for payload in failed:
            out.pop(payload, None)
        return out, failed


def _met(bucket: _Bucket, v: Any) -> list[Any]:
    """The members whose ``v op L`` holds."""
    members, op = bucket.members, bucket.op
    # (L, rank) pairs: (v, -1) sorts before every pair of L = v, (v, inf) after them
    below = bisect.bisect_left(bucket.limits, (v, -1))
    above = bisect.bisect_left(bucket.limits, (v, float("inf")))
    if op == ">":
        return members[:below]
    if op == ">=":
        return members[:above]
    if op == "<":
        return members[above:]
    if op == "<=":
        return members[below:]
    if op == "=":
        return members[below:above]
    return members[:below] + members[above:]
