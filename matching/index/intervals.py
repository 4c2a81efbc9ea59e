"""An interval index over the key ranges of many range watches (SPEC 8.3 form 4, issue 21).

A change to the open offers affects the watches whose key range overlaps the change's
range (the key values the change touches, or ProSem's maximum affected range). With
100,000 range-min watches per process a loop over all of them per change is the cost to
avoid: ``IntervalIndex.overlapping`` finds the overlapping ones by visiting a number of
nodes that grows with the logarithm of the watches held plus the number found.

Ranges are ``Span``s over one numeric key: each end bounded (closed or open) or
unbounded, compared as points on a dense line (decimals; an int range from the
constraint language arrives closed, SPEC 2.4's canonical form, so the dense reading is
exact for it too). An empty span (``(3, 3)``, ``[5, 3]``) is kept but overlaps nothing.

The structure is a treap (a binary search tree whose shape is fixed by random
priorities, so it stays balanced in expectation under any order of insertions and
removals) ordered by lower bound, each node carrying the largest upper bound of its
subtree. A search skips every subtree whose largest upper bound is below the query's
lower bound and stops going right at the first node that starts after the query's upper
bound. It is written here rather than taken from a library because the searches need the
exact open/closed comparison of SPEC 2's intervals and a count of the nodes visited
(``visited``), which is what the tests and the dissemination cost model read.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

from matching import Interval, Predicate
from matching.subscriptions.language.model import AttrTest, WatchQuery

# An end as a sortable pair: (value, nudge). A closed end is the value itself (0); an open
# lower end sits just after its value (+1), an open upper end just before it (-1);
# unbounded ends are -inf and +inf. A point x lies in a span when lower <= (x, 0) <= upper.
_Bound = tuple[Any, int]
_BELOW_ALL: _Bound = (-math.inf, 0)
_ABOVE_ALL: _Bound = (math.inf, 0)


@dataclass(frozen=True)
class Span:
    """``lo .. hi`` with ``None`` for an unbounded end (whose flag is set to ``False``, so
    that equal spans compare equal)."""

    lo: Any = None
    lo_closed: bool = True
    hi: Any = None
    hi_closed: bool = True

    def __post_init__(self) -> None:
        if self.lo is None:
            object.__setattr__(self, "lo_closed", False)
        if self.hi is None:
            object.__setattr__(self, "hi_closed", False)

    @classmethod
    def of(cls, predicate: Predicate | None) -> Span:
        """The span of a numeric key's SPEC 2 predicate (``Wildcard`` or ``None``: the whole line)."""
        if not isinstance(predicate, Interval):
            return cls()
        return cls(predicate.lo, predicate.lo_closed, predicate.hi, predicate.hi_closed)

    @classmethod
    def point(cls, value: Any) -> Span:
        return cls(value, True, value, True)

    @property
    def lower(self) -> _Bound:
        if self.lo is None:
            return _BELOW_ALL
        return (self.lo, 0 if self.lo_closed else 1)

    @property
    def upper(self) -> _Bound:
        if self.hi is None:
            return _ABOVE_ALL
        return (self.hi, 0 if self.hi_closed else -1)

    @property
    def empty(self) -> bool:
        return self.lower > self.upper

    def intersection(self, other: Span) -> Span:
        """The points in both (an empty span when there are none)."""
        low = self if self.lower >= other.lower else other
        high = self if self.upper <= other.upper else other
        return Span(low.lo, low.lo_closed, high.hi, high.hi_closed)

    def overlaps(self, other: Span) -> bool:
        return (
            not self.empty
            and not other.empty
            and self.lower <= other.upper
            and other.lower <= self.upper
        )


def key_span(q: WatchQuery) -> Span | None:
    """The range of a range watch's key (its key tests intersected), what the index holds
    for it; ``None`` when the watch has no key (every offer of its subject is in range)."""
    if q.key is None:
        return None
    span = Span()
    for t in q.tests:
        if isinstance(t, AttrTest) and t.attribute == q.key:
            span = span.intersection(Span.of(t.predicate))
    return span


class _Node:
    __slots__ = ("order", "upper", "top", "key", "priority", "left", "right")

    def __init__(self, order: tuple[_Bound, int], upper: _Bound, key: Hashable, priority: float):
        self.order = order  # (lower bound, insertion number): unique, the tree's order
        self.upper = upper
        self.top = upper  # the largest upper bound in this subtree
        self.key = key
        self.priority = priority
        self.left: _Node | None = None
        self.right: _Node | None = None

    def refresh(self) -> None:
        top = self.upper
        if self.left is not None and self.left.top > top:
            top = self.left.top
        if self.right is not None and self.right.top > top:
            top = self.right.top
        self.top = top


class IntervalIndex:
    """Keys (watch ids) with their spans; insertion and removal may interleave with searches.

    ``visited`` counts the nodes the last search looked at (for tests and cost estimates).
    """

    def __init__(self, seed: int = 0) -> None:
        self._random = random.Random(seed)
        self._root: _Node | None = None
        self._where: dict[Hashable, tuple[tuple[_Bound, int], Span]] = {}
        self._empty: dict[Hashable, Span] = {}
        self._counter = 0
        self.visited = 0

    def __len__(self) -> int:
        return len(self._where) + len(self._empty)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._where or key in self._empty

    def add(self, key: Hashable, span: Span) -> None:
        """Index ``key`` with ``span``; a key already held is moved to the new span."""
        if key in self:
            self.remove(key)
        if span.empty:
            self._empty[key] = span
            return
        self._counter += 1
        order = (span.lower, self._counter)
        node = _Node(order, span.upper, key, self._random.random())
        left, right = _split(self._root, order)
        self._root = _merge(_merge(left, node), right)
        self._where[key] = (order, span)

    def remove(self, key: Hashable) -> None:
        """Forget ``key``; ``KeyError`` if it is not held."""
        if key in self._empty:
            del self._empty[key]
            return
        order, _ = self._where.pop(key)
        left, rest = _split(self._root, order)
        _, right = _split(rest, (order[0], order[1] + 1))
        self._root = _merge(left, right)

    def span(self, key: Hashable) -> Span:
        if key in self._empty:
            return self._empty[key]
        return self._where[key][1]

    def overlapping(self, span: Span) -> list[Hashable]:
        """The keys whose span overlaps ``span``, in order of their lower bounds."""
        self.visited = 0
        found: list[Hashable] = []
        if span.empty:
            return found
        lower, upper = span.lower, span.upper
        stack: list[_Node] = []
        node = self._root
        # In-order walk, pruned: a subtree whose spans all end below ``lower`` is skipped,
        # and nothing from a node that starts after ``upper`` on can overlap.
        while True:
            while node is not None:
                self.visited += 1
                if node.top < lower:
                    break
                stack.append(node)
                node = node.left
            if not stack:
                break
            node = stack.pop()
            if node.order[0] > upper:
                break
            if node.upper >= lower:
                found.append(node.key)
            node = node.right
        return found

    def between(self, inner: Span, outer: Span) -> list[Hashable]:
        """The keys whose span holds ``inner`` and lies within ``outer``, in order of their
        lower bounds: ProSem's stateless filter ``OUTER_L < xmin <= INNER_L and INNER_R <=
        xmax < OUTER_R`` for a reformulated change (``inner`` the changed key, ``outer`` its
        maximum affected range, open at both ends), with any ends open or closed."""
        self.visited = 0
        found: list[Hashable] = []
        if inner.empty:
            return found
        lo_min, lo_max = outer.lower, inner.lower  # where the span's lower bound may lie
        up_min, up_max = inner.upper, outer.upper  # and its upper bound
        if lo_min > lo_max or up_min > up_max:
            return found
        self._between(self._root, lo_min, lo_max, up_min, up_max, found)
        return found

    def _between(
        self,
        node: _Node | None,
        lo_min: _Bound,
        lo_max: _Bound,
        up_min: _Bound,
        up_max: _Bound,
        found: list[Hashable],
    ) -> None:
        if node is None:
            return
        self.visited += 1
        if node.top < up_min:  # every span below ends too early to hold ``inner``
            return
        lower = node.order[0]
        if lower >= lo_min:  # smaller lower bounds on the left may still be in range
            self._between(node.left, lo_min, lo_max, up_min, up_max, found)
        if lo_min <= lower <= lo_max and up_min <= node.upper <= up_max:
            found.append(node.key)
        if lower <= lo_max:
            self._between(node.right, lo_min, lo_max, up_min, up_max, found)

    def __iter__(self) -> Iterator[Hashable]:
        yield from self._where
        yield from self._empty


def _split(node: _Node | None, order: tuple[_Bound, int]) -> tuple[_Node | None, _Node | None]:
    """The nodes before ``order`` and those at or after it, as two treaps."""
    if node is None:
        return None, None
    if node.order < order:
        left, right = _split(node.right, order)
        node.right = left
        node.refresh()
        return node, right
    left, right = _split(node.left, order)
    node.left = right
    node.refresh()
    return left, node


def _merge(a: _Node | None, b: _Node | None) -> _Node | None:
    """One treap of ``a`` and ``b``, every node of ``a`` ordered before every node of ``b``."""
    if a is None:
        return b
    if b is None:
        return a
    if a.priority > b.priority:
        a.right = _merge(a.right, b)
        a.refresh()
        return a
    b.left = _merge(a, b.left)
    b.refresh()
    return b
