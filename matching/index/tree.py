"""The matching tree of SPEC 8.2 (Aguilera et al., seed 004): many stateless subscriptions
searched together, one walk per event.

A subscription is a conjunction of tests on one event: at most one subject pattern (SPEC
8.2) and at most one predicate per attribute, each an equality, a presence test (``= *``)
or a range (``Interval`` with one or two bounds). The event matches when every test holds
(an absent attribute fails every test on it). ``MatchingIndex.match`` returns exactly the
ids of the subscriptions whose tests all hold and whose residual check, if any, accepts the
event; that is the whole contract, and it is what the tests compare with brute force.

Shape of the tree. The subject comes first, as a trie over its tokens (a literal token, ``*``
or ``>`` per edge); every place where a pattern ends holds the root of an attribute tree,
and the subscriptions without a subject pattern share one more root. An attribute tree
tests the attributes of ``order`` one level each: a node of level ``k`` has equality
edges (a dict from value to child), a presence edge, range edges (sorted bounds, below) and
one don't-care edge for the subscriptions that do not test ``order[k]``. Don't-care chains
are collapsed: the don't-care edge of a level-``k`` node leads straight to the next level
at which some subscription below it has a test, so a node exists only where a test is
made, and a walk never passes a node that only says "anything". A leaf holds the ids.

Ranges. One-sided ranges sit in two sorted lists of bounds at the node: the lower bounds an
event value reaches form a prefix of theirs and the upper bounds it stays under a suffix of
theirs, found by one bisection on the bound values themselves (an open and a closed bound
at the event's own value are told apart by one more comparison), so every child followed
is one the event passes. Two-sided ranges are sorted by their lower bound; the prefix the
value reaches is scanned and each upper bound checked (each bound looked at counts as a
visited node in ``match_counted``).

A leaf is the set of its ids itself (``_Leaf``), so the walk adds a leaf to its answer in
one call, and a run of range bounds whose children are all leaves in one call too.

Insertion and removal may be interleaved with matching. Removal frees the nodes left
empty and undoes the don't-care splits it no longer needs, so the tree after removing a
subscription is the tree that was built without it.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, final

from matching import Interval, Wildcard
from matching.subjects import ONE, REST, SubjectPattern

LEAF = 1 << 30  # the level of a leaf: deeper than any attribute level

# A well-formed subject (SPEC 8.2); any other subject matches no pattern.
_SUBJECT_RE = re.compile(r"[a-z0-9]+(?:\.[a-z0-9]+)*", re.ASCII)

Residual = Callable[[Mapping[str, Any]], bool]
IndexTest = tuple[str, Interval | Wildcard]

_EQ, _PRESENT, _LOWER, _UPPER, _BOTH = range(5)


class IndexEntryError(ValueError):
    """A subscription the index cannot hold as given (the message names what and where)."""


def _classify(attribute: str, pred: object) -> tuple[int, Any]:
    """The edge kind of a test and its key: the value for an equality; for a bound, the
    pair ``(value, rank)`` in the order a rising event value meets them: a closed lower
    bound (rank 0) is reached at its value and an open one (rank 1) only above it; an open
    upper bound (rank 0) is left at its value and a closed one (rank 1) only above it. A
    two-sided range's key is its lower pair followed by its upper pair."""
    if type(pred) is Wildcard:
        return _PRESENT, None
    if not isinstance(pred, Interval):
        raise IndexEntryError(
            f"the test on {attribute} is a {type(pred).__name__}: the index holds equality, "
            "presence (= *) and range tests only"
        )
    lo, hi = pred.lo, pred.hi
    if lo is not None and hi is not None and pred.lo_closed and pred.hi_closed and lo == hi:
        return _EQ, lo
    if lo is None and hi is None:
        return _PRESENT, None
    lo_rank = 0 if pred.lo_closed else 1
    hi_rank = 1 if pred.hi_closed else 0
    if hi is None:
        return _LOWER, (lo, lo_rank)
    if lo is None:
        return _UPPER, (hi, hi_rank)
    return _BOTH, (lo, lo_rank, hi, hi_rank)


@final
class _Leaf(set[Hashable]):
    """The ids of the subscriptions whose tests end here. Being the set itself, a leaf is
    added to a walk's answer in one call, with no node object to pass through."""

    __slots__ = ()
    level = LEAF


class _Sorted:
    """Children under range bounds, sorted by bound value and then by ``tails`` (the rest
    of the key: a bound's rank, or for a two-sided range its lower rank and upper pair).

    ``keys`` holds the bare values so that the walk bisects with the event's own value,
    one comparison of values per step. ``inner`` counts the children that are not leaves:
    when it is 0 a run of children is added to the answer whole.
    """

    __slots__ = ("keys", "tails", "nodes", "inner")

    def __init__(self) -> None:
        self.keys: list[Any] = []
        self.tails: list[Any] = []
        self.nodes: list[_Child] = []
        self.inner = 0

    def _find(self, key: tuple[Any, ...]) -> tuple[int, bool]:
        value, tail = key[0], key[1] if len(key) == 2 else key[1:]
        keys, tails = self.keys, self.tails
        i = bisect_left(keys, value)
        n = len(keys)
        while i < n and keys[i] == value and tails[i] < tail:
            i += 1
        return i, i < n and keys[i] == value and tails[i] == tail

    def get(self, key: tuple[Any, ...]) -> _Child | None:
        i, found = self._find(key)
        return self.nodes[i] if found else None

    def put(self, key: tuple[Any, ...], node: _Child | None) -> None:
        """Set (or, with ``None``, drop) the child under ``key``."""
        i, found = self._find(key)
        if found:
            self.inner -= type(self.nodes[i]) is _Node
            if node is None:
                del self.keys[i], self.tails[i], self.nodes[i]
                return
            self.nodes[i] = node
        elif node is None:
            return
        else:
            self.keys.insert(i, key[0])
            self.tails.insert(i, key[1] if len(key) == 2 else key[1:])
            self.nodes.insert(i, node)
        self.inner += type(node) is _Node


@final
class _Node:
    __slots__ = ("level", "skip", "eq", "present", "lower", "upper", "both")

    def __init__(self, level: int) -> None:
        self.level = level
        self.skip: _Child | None = None
        self.eq: dict[Any, _Child] | None = None
        self.present: _Child | None = None
        self.lower: _Sorted | None = None
        self.upper: _Sorted | None = None
        self.both: _Sorted | None = None

    def has_tests(self) -> bool:
        return bool(
            self.eq
            or self.present is not None
            or (self.lower and self.lower.keys)
            or (self.upper and self.upper.keys)
            or (self.both and self.both.keys)
        )


_Child = _Node | _Leaf


class _Trie:
    __slots__ = ("lit", "one", "rest", "end")

    def __init__(self) -> None:
        self.lit: dict[str, _Trie] = {}
        self.one: _Trie | None = None
        self.rest: _Child | None = None  # patterns ending in '>' here
        self.end: _Child | None = None  # patterns ending here

    def empty(self) -> bool:
        return not self.lit and self.one is None and self.rest is None and self.end is None


@dataclass(frozen=True)
class Entry:
    """What the index keeps of one subscription (to remove it, and to read it back)."""

    subject: SubjectPattern | None
    tests: tuple[IndexTest, ...]
    residual: Residual | None


def choose_order(test_lists: Iterable[Iterable[IndexTest]]) -> tuple[str, ...]:
    """An attribute order for the tree, chosen from (a sample of) the subscriptions.

    Attributes mostly tested by equality or presence come first, those mostly tested by
    ranges last (an equality edge is one dict probe and lets an event follow at most one
    branch besides don't-care; a range level may send it down many). Within each group an
    attribute tested by more subscriptions comes first: seed 004's analysis has the walk
    follow fewer branches the more non-don't-care edges lie on the paths, so the levels
    most subscriptions test are placed where they split the set earliest. Ties go by name,
    so the order is deterministic.
    """
    count: dict[str, int] = {}
    ranges: dict[str, int] = {}
    for tests in test_lists:
        for attribute, pred in tests:
            count[attribute] = count.get(attribute, 0) + 1
            if _classify(attribute, pred)[0] in (_LOWER, _UPPER, _BOTH):
                ranges[attribute] = ranges.get(attribute, 0) + 1
    return tuple(sorted(count, key=lambda a: (2 * ranges.get(a, 0) > count[a], -count[a], a)))


class MatchingIndex:
    """Stateless subscriptions under ids, matched against events given as attribute maps.

    ``order`` is the attribute order of the tree's levels (see ``choose_order``); a test
    on an attribute not in it appends that attribute as a new last level, which leaves
    every existing node valid. ``rebuild(order)`` re-inserts everything in another order.
    """

    def __init__(self, order: Sequence[str] = ()) -> None:
        self.order: list[str] = []
        self._level: dict[str, int] = {}
        for attribute in order:
            self._add_level(attribute)
        self._entries: dict[Hashable, Entry] = {}
        self._residuals: dict[Hashable, Residual] = {}
        self._trie = _Trie()
        self._any: _Child | None = None  # subscriptions without a subject pattern

    def _add_level(self, attribute: str) -> int:
        if attribute not in self._level:
            self._level[attribute] = len(self.order)
            self.order.append(attribute)
        return self._level[attribute]

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, sub_id: object) -> bool:
        return sub_id in self._entries

    def entry(self, sub_id: Hashable) -> Entry:
        return self._entries[sub_id]

    # -- changes ----------------------------------------------------------------------------

    def add(
        self,
        sub_id: Hashable,
        *,
        subject: SubjectPattern | None = None,
        tests: Iterable[IndexTest] = (),
        residual: Residual | None = None,
    ) -> None:
        """Hold subscription ``sub_id``. ``IndexEntryError`` (nothing changed) if the id is
        already held, an attribute is tested twice or a test is not one the index holds."""
        if sub_id in self._entries:
            raise IndexEntryError(f"subscription {sub_id!r} is already in the index")
        tests = tuple(tests)
        seen: set[str] = set()
        for attribute, pred in tests:
            if attribute in seen:
                raise IndexEntryError(
                    f"{attribute} is tested twice: give the index one test per attribute "
                    "(intersect them, or leave the second to the residual check)"
                )
            seen.add(attribute)
            _classify(attribute, pred)
        entry = Entry(subject, tests, residual)
        path = self._path(entry)
        self._entries[sub_id] = entry
        if residual is not None:
            self._residuals[sub_id] = residual
        if subject is None:
            self._any = self._insert(self._any, path, 0, sub_id)
            return
        trie = self._trie
        for token in subject.tokens:
            if token == REST:
                trie.rest = self._insert(trie.rest, path, 0, sub_id)
                return
            if token == ONE:
                if trie.one is None:
                    trie.one = _Trie()
                trie = trie.one
            else:
                trie = trie.lit.setdefault(token, _Trie())
        trie.end = self._insert(trie.end, path, 0, sub_id)

    def remove(self, sub_id: Hashable) -> None:
        """Drop subscription ``sub_id``; ``KeyError`` (nothing changed) if it is not held."""
        entry = self._entries.pop(sub_id)
        self._residuals.pop(sub_id, None)
        path = self._path(entry)
        if entry.subject is None:
            self._any = self._remove(self._any, path, 0, sub_id)
        else:
            self._remove_from_trie(self._trie, entry.subject.tokens, 0, path, sub_id)

    def rebuild(self, order: Sequence[str]) -> None:
        """The same subscriptions in a tree whose levels follow ``order``."""
        entries = self._entries
        self.__init__(order)  # type: ignore[misc]  # no subclass: rebuilt in place
        for sub_id, e in entries.items():
            self.add(sub_id, subject=e.subject, tests=e.tests, residual=e.residual)

    def _path(self, entry: Entry) -> list[tuple[int, int, Any]]:
        """The subscription's tests as ``(level, kind, key)``, by level."""
        path = [
            (self._add_level(attribute), *_classify(attribute, pred))
            for attribute, pred in entry.tests
        ]
        path.sort(key=lambda step: step[0])
        return path

    def _insert(
        self, node: _Child | None, path: list[tuple[int, int, Any]], i: int, sub_id: Hashable
    ) -> _Child:
        level = path[i][0] if i < len(path) else LEAF
        if node is None:
            node = _Leaf() if level == LEAF else _Node(level)
        elif node.level > level:
            # This subscription tests a level the don't-care edge leading here jumped over.
            split = _Node(level)
            split.skip = node
            node = split
        if type(node) is _Leaf:
            node.add(sub_id)
        elif node.level < level:
            node.skip = self._insert(node.skip, path, i, sub_id)
        else:
            _, kind, key = path[i]
            if kind == _EQ:
                if node.eq is None:
                    node.eq = {}
                node.eq[key] = self._insert(node.eq.get(key), path, i + 1, sub_id)
            elif kind == _PRESENT:
                node.present = self._insert(node.present, path, i + 1, sub_id)
            else:
                sorted_ = self._sorted(node, kind)
                sorted_.put(key, self._insert(sorted_.get(key), path, i + 1, sub_id))
        return node

    @staticmethod
    def _sorted(node: _Node, kind: int) -> _Sorted:
        if kind == _LOWER:
            if node.lower is None:
                node.lower = _Sorted()
            return node.lower
        if kind == _UPPER:
            if node.upper is None:
                node.upper = _Sorted()
            return node.upper
        if node.both is None:
            node.both = _Sorted()
        return node.both

    def _remove(
        self, node: _Child | None, path: list[tuple[int, int, Any]], i: int, sub_id: Hashable
    ) -> _Child | None:
        """The node that replaces ``node`` once ``sub_id`` is gone below it (``None``: nothing
        is left; its don't-care child: it no longer tests anything itself)."""
        assert node is not None, "a held subscription's path is in the tree"
        level = path[i][0] if i < len(path) else LEAF
        if type(node) is _Leaf:
            node.discard(sub_id)
            return node if len(node) else None
        if node.level < level:
            node.skip = self._remove(node.skip, path, i, sub_id)
        else:
            _, kind, key = path[i]
            if kind == _EQ:
                assert node.eq is not None
                child = self._remove(node.eq[key], path, i + 1, sub_id)
                if child is None:
                    del node.eq[key]
                else:
                    node.eq[key] = child
            elif kind == _PRESENT:
                node.present = self._remove(node.present, path, i + 1, sub_id)
            else:
                sorted_ = self._sorted(node, kind)
                sorted_.put(key, self._remove(sorted_.get(key), path, i + 1, sub_id))
        return node if node.has_tests() else node.skip

    def _remove_from_trie(
        self,
        trie: _Trie,
        tokens: tuple[str, ...],
        k: int,
        path: list[tuple[int, int, Any]],
        sub_id: Hashable,
    ) -> None:
        if k == len(tokens):
            trie.end = self._remove(trie.end, path, 0, sub_id)
            return
        token = tokens[k]
        if token == REST:
            trie.rest = self._remove(trie.rest, path, 0, sub_id)
            return
        child = trie.one if token == ONE else trie.lit[token]
        assert child is not None
        self._remove_from_trie(child, tokens, k + 1, path, sub_id)
        if child.empty():
            if token == ONE:
                trie.one = None
            else:
                del trie.lit[token]

    # -- matching ---------------------------------------------------------------------------

    def match(self, values: Mapping[str, Any]) -> set[Hashable]:
        """The ids of the subscriptions ``values`` (an event's typed attributes) matches."""
        return self.match_counted(values)[0]

    def match_counted(self, values: Mapping[str, Any]) -> tuple[set[Hashable], int]:
        """``match``'s answer and the number of nodes the walk visited (trie nodes, tree
        nodes and two-sided range entries looked at)."""
        found, visited = self.candidates(values)
        if self._residuals and found:
            residuals = self._residuals
            found = {s for s in found if s not in residuals or residuals[s](values)}
        return found, visited

    def candidates(self, values: Mapping[str, Any]) -> tuple[set[Hashable], int]:
        """The subscriptions whose tree tests ``values`` passes, before residual checks
        (``residual(id)`` gives each one's check), and the nodes visited."""
        stack: list[_Child] = []
        visited = 0
        if self._any is not None:
            stack.append(self._any)
        subject = values.get("subject")
        if type(subject) is str and _SUBJECT_RE.fullmatch(subject):
            tokens = subject.split(".")
            n = len(tokens)
            tries = [(self._trie, 0)]
            while tries:
                trie, k = tries.pop()
                visited += 1
                if k == n:
                    if trie.end is not None:
                        stack.append(trie.end)
                    continue
                if trie.rest is not None:
                    stack.append(trie.rest)
                next_trie = trie.lit.get(tokens[k])
                if next_trie is not None:
                    tries.append((next_trie, k + 1))
                if trie.one is not None:
                    tries.append((trie.one, k + 1))
        found: set[Hashable] = set()
        add_all = found.update
        order = self.order
        push = stack.append
        extend = stack.extend
        while stack:
            node = stack.pop()
            visited += 1
            if type(node) is _Leaf:
                add_all(node)
                continue
            if node.skip is not None:
                push(node.skip)
            v = values.get(order[node.level])
            if v is None:
                continue
            if node.eq is not None:
                child = node.eq.get(v)
                if child is not None:
                    push(child)
            if node.present is not None:
                push(node.present)
            bounds = node.lower
            if bounds is not None:
                keys = bounds.keys
                i = bisect_right(keys, v)
                if i and bounds.tails[i - 1] and keys[i - 1] == v:
                    i -= 1  # an open lower bound at v itself is not reached
                if bounds.inner:
                    extend(bounds.nodes[:i])
                elif i:  # no inner child: these are all leaves
                    add_all(*bounds.nodes[:i])  # type: ignore[arg-type]  # leaves: sets of entries
                    visited += i
            bounds = node.upper
            if bounds is not None:
                keys = bounds.keys
                i = bisect_left(keys, v)
                if i < len(keys) and not bounds.tails[i] and keys[i] == v:
                    i += 1  # an open upper bound at v itself is not kept
                if bounds.inner:
                    extend(bounds.nodes[i:])
                elif i < len(keys):  # no inner child: these are all leaves
                    add_all(*bounds.nodes[i:])  # type: ignore[arg-type]  # as above
                    visited += len(keys) - i
            bounds = node.both
            if bounds is not None:
                keys = bounds.keys
                tails = bounds.tails
                i = bisect_right(keys, v)
                while i and tails[i - 1][0] and keys[i - 1] == v:
                    i -= 1  # open lower bounds at v itself are not reached
                visited += i
                for j in range(i):
                    _, hi, hi_rank = tails[j]
                    if v < hi or (hi_rank and v == hi):
                        push(bounds.nodes[j])
        return found, visited

    def residual(self, sub_id: Hashable) -> Residual | None:
        return self._residuals.get(sub_id)

    def node_count(self) -> int:
        """Trie and tree nodes held (for memory reports and the tests of removal)."""
        count = 0
        tries = [self._trie]
        nodes = [n for n in (self._any,) if n is not None]
        while tries:
            trie = tries.pop()
            count += 1
            tries.extend(trie.lit.values())
            if trie.one is not None:
                tries.append(trie.one)
            nodes.extend(n for n in (trie.rest, trie.end) if n is not None)
        while nodes:
            node = nodes.pop()
            count += 1
            if type(node) is _Leaf:
                continue
            nodes.extend(n for n in (node.skip, node.present) if n is not None)
            if node.eq:
                nodes.extend(node.eq.values())
            for sorted_ in (node.lower, node.upper, node.both):
                if sorted_ is not None:
                    nodes.extend(sorted_.nodes)
        return count
