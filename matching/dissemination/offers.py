"""What a change to the open offers does to a family of range watches.

A *family* is every range watch with the same function, selected attribute, subject test
and key (``FamilyName``); its members differ only in their key range. Within a family each
qualifying offer is an ``Entry``: a point on the key line with a *rank*, lower being
better (``(value, offer)`` for ``MIN``, ``(-value, offer)`` for ``MAX``, so ties go to the
lower offer id as SPEC 8.3 wants). A watch's answer is the best entry inside its range.

A change moves one offer from an old entry to a new one (either may be absent). What it
does to the family is a ``Delta`` in ProSem's terms (seed 002):

* ``Gain``: the new entry is now the answer of exactly the watches whose range holds its
  key and lies strictly inside ``(lo, hi)``, the keys of the nearest better entries to
  either side (``None``: there is none). That is ProSem's ``NEW_MIN, INNER_L = INNER_R =
  key, OUTER_L = lo, OUTER_R = hi`` message for a decrease of the minimum.
* ``Loss``: the watches whose answer was the old entry are those whose range holds its
  key inside ``(lo, hi)`` computed against the old rank. Each needs the best remaining
  entry of *its own* range, which a stateless filter cannot know; the loss therefore
  carries the two *staircases* of the remaining entries inside ``(lo, hi)``: walking away
  from the key on either side, every entry better than all those nearer the key. The best
  entry of a range holding the key is the last left step inside the range or the last
  right step inside it, whichever is better. With random ranks a staircase has a
  logarithmic number of steps; its worst case (ranks sorted by distance) is every entry
  in ``(lo, hi)``, which the optimizer sees in the message's size.

A decrease in place (same key, a rank no worse) carries no loss: every watch that had the
offer keeps it and is covered by the gain.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from itertools import chain
from typing import Any, cast

from matching.index.intervals import Span, key_span
from matching.model import Interval
from matching.subjects import SubjectPattern, compile_pattern
from matching.subscriptions.events import Event
from matching.subscriptions.language.model import SubjectTest, WatchQuery
from matching.subscriptions.watches.offers import OpenOffer, OpenOffers
from matching.subscriptions.watches.watch import Answer

Rank = tuple[Any, int]
Pair = tuple[Any, Rank]
# Sort-key sentinels around every (key, rank) pair of one key value.
_TOP = (math.inf, math.inf)
_BOTTOM = (-math.inf, -math.inf)


@dataclass(frozen=True)
class FamilyName:
    """Watches that share all but their key range (``key`` ``None``: no key test)."""

    func: str
    attribute: str
    subject: str
    key: str | None

    def __str__(self) -> str:
        return f"{self.func}|{self.attribute}|{self.subject}|{self.key or ''}"

    @classmethod
    def parse(cls, text: str) -> FamilyName:
        func, attribute, subject, key = text.split("|")
        return cls(func, attribute, subject, key or None)


def family_of(q: WatchQuery) -> tuple[FamilyName, Span]:
    """A range watch's family and key range; ``ValueError`` for a single-offer watch, which
    follows one offer and is not disseminated by range."""
    if q.func is None:
        raise ValueError("only MIN/MAX watches over a key range are disseminated by range")
    # ``subject = 's'`` reads as a one-point interval, ``MATCHES`` as a pattern; a literal
    # pattern matches exactly its subject, so both become a pattern here
    subjects = [
        t.pattern if isinstance(t, SubjectTest) else cast(Interval, t.predicate).lo
        for t in q.tests
        if isinstance(t, SubjectTest) or t.attribute == "subject"
    ]
    if len(subjects) != 1 or not isinstance(subjects[0], str):
        raise ValueError("a range watch has exactly one subject test")
    span = key_span(q)
    return FamilyName(q.func, q.attribute, subjects[0], q.key), span or Span()


@dataclass(frozen=True)
class Entry:
    """One offer in a family: its key value (0 without a key), rank and answer."""

    key: Any
    rank: Rank
    answer: Answer


@dataclass(frozen=True)
class Gain:
    entry: Entry
    lo: Any
    hi: Any


@dataclass(frozen=True)
class Loss:
    at: Any
    lo: Any
    hi: Any
    left: tuple[Entry, ...]  # steps at or below ``at``, nearest first
    right: tuple[Entry, ...]  # steps at or above ``at``, nearest first

    def answer_for(self, span: Span) -> Answer | None:
        """The best remaining entry of a range that holds ``at`` and lies inside (lo, hi)."""
        best: Entry | None = None
        for step in self.left:
            if (step.key, 0) < span.lower:
                break
            best = step
        for step in self.right:
            if (step.key, 0) > span.upper:
                break
            if best is None or step.rank < best.rank:
                best = step
        return None if best is None else best.answer


@dataclass(frozen=True)
class Delta:
    family: FamilyName
    offer: int
    loss: Loss | None
    gain: Gain | None


def outer(lo: Any, hi: Any) -> Span:
    """The open range between the nearest better entries."""
    return Span(lo, False, hi, False)


class Family:
    """The entries of one family, sorted by key, with the changes applied so far in ``log``
    (what a replica that fell behind is sent to catch up)."""

    def __init__(self, name: FamilyName) -> None:
        self.name = name
        self.entries: dict[int, Entry] = {}
        self.by_key = _KeyLine()
        self.log: list[tuple[int, Entry | None]] = []
        # the best rank of any run of entries, built when a registration asks after a change
        self._ranks: _Ranks | None = None

    @cached_property
    def pattern(self) -> SubjectPattern:
        """The subject test, compiled the first time it is asked for (a consumer's replica
        never asks) and dropped with the family: a cache shared by all families kept every
        pattern ever watched, long after its watches had gone."""
        return compile_pattern(self.name.subject)

    def entry(self, offer: int, row: OpenOffer | None) -> Entry | None:
        """The offer's entry, ``None`` when it does not qualify for the family."""
        name = self.name
        if row is None or name.attribute not in row.values:
            return None
        subject = row.values.get("subject")
        if not isinstance(subject, str) or not self.pattern.matches(subject):
            return None
        if name.key is None:
            key: Any = 0
        elif name.key in row.values:
            key = row.values[name.key]
        else:
            return None
        value = row.values[name.attribute]
        rank = (value if name.func == "MIN" else -cast(Decimal, value), offer)
        return Entry(key, rank, Answer(offer, value, row.shown[name.attribute]))

    def put(self, offer: int, new: Entry | None) -> Delta | None:
        """Moves ``offer`` to ``new``; what that does to the family's watches."""
        old = self.entries.get(offer)
        if old == new:
            return None
        self.log.append((offer, new))
        self._ranks = None
        # the new pair goes in before the old one comes out: an offer that betters itself in
        # place (a bidding war) makes its new pair its block's best first, and removing the
        # old one then has no block's best to find again (a pass over the block, 20 us)
        if new is not None:
            self.by_key.add((new.key, new.rank))
        if old is not None:
            self.by_key.remove((old.key, old.rank))
            del self.entries[offer]
        if new is not None:
            self.entries[offer] = new
        loss = None
        if old is not None and not (
            new is not None and new.key == old.key and new.rank <= old.rank
        ):
            lo, hi = self._nearest_better(old.key, old.rank, offer)
            loss = Loss(old.key, lo, hi, *self._staircases(old.key, lo, hi))
        gain = None
        if new is not None:
            gain = Gain(new, *self._nearest_better(new.key, new.rank, offer))
        return Delta(self.name, offer, loss, gain)

    def best_in(self, span: Span) -> Answer | None:
        """The best entry inside ``span`` (registration only): the entries' positions in key
        order found by bisection, their best rank read from ``_Ranks``."""
        if self._ranks is None:
            self._ranks = _Ranks(list(self.by_key))
        best = self._ranks.best(span)
        return None if best is None else self.entries[best[1]].answer

    def _nearest_better(self, at: Any, rank: Rank, offer: int) -> tuple[Any, Any]:
        """The keys of the nearest entries at or below ``at`` and at or above it whose rank is
        better than ``rank``, ``offer``'s own entry aside (``None``: there is none)."""
        return self.by_key.nearest_better(at, rank, offer)

    def _staircases(self, at: Any, lo: Any, hi: Any) -> tuple[tuple[Entry, ...], tuple[Entry, ...]]:
        left = self._steps(
            self.by_key.irange(
                minimum=None if lo is None else (lo, _TOP), maximum=(at, _TOP), reverse=True
            )
        )
        right = self._steps(
            self.by_key.irange(minimum=(at, _BOTTOM), maximum=None if hi is None else (hi, _BOTTOM))
        )
        return left, right

    def _steps(self, pairs: Any) -> tuple[Entry, ...]:
        steps: list[Entry] = []
        for _, rank in pairs:
            if not steps or rank < steps[-1].rank:
                steps.append(self.entries[rank[1]])
        return tuple(steps)


# 256: on 10,000 entries a new best's walks took 5.9 us with 64, 2.5 with 256, 1.8 with
# 512, whose scans of a block are twice as long when the block's best lies beyond ``at``
_LOAD = 256


class _KeyLine:
    """The family's ``(key, rank)`` pairs in order, cut into blocks of ``load // 2`` to
    ``2 * load`` pairs (a lone block may hold fewer), with the last pair and the best rank
    of each block.

    The best ranks are what it is for. The nearest better entry to a key (``nearest_better``)
    was a walk over the pairs away from the key, and a new best entry, the usual change
    under a rising load, walked every pair of the family on both sides (1.1 ms a change
    over 10,000 entries). The walk now scans the pairs of the key's own block, skips every
    block whose best rank is no better, and scans the first block that has a better one
    (two when the first one's is ``offer``'s own pair): on each side, at most three blocks
    scanned and every block's best read once, some ``6 * load + 2 * n / load`` steps for
    ``n`` pairs, and most often far fewer. A change keeps its block's last pair and best rank
    at the cost of an insertion into a list of at most ``2 * load`` pairs, and of a pass
    over the block when it removes the block's best or splits or merges the block. The
    blocks are our own rather than a ``SortedList``'s, whose blocks are private and may
    change under us."""

    __slots__ = ("load", "blocks", "lasts", "bests")

    def __init__(self, load: int = _LOAD) -> None:
        # at least 2, so that a block left empty is merged away (the tests use small loads)
        if load < 2:
            raise ValueError(f"a key line's load is at least 2, not {load}")
        self.load = load
        self.blocks: list[list[Pair]] = []
        self.lasts: list[Pair] = []
        self.bests: list[Rank] = []

    def __len__(self) -> int:
        return sum(len(block) for block in self.blocks)

    def __iter__(self) -> Iterator[Pair]:
        return chain.from_iterable(self.blocks)

    def add(self, pair: Pair) -> None:
        if not self.blocks:
            self.blocks.append([pair])
            self.lasts.append(pair)
            self.bests.append(pair[1])
            return
        # the first block whose last pair is not below; past the last pair, the last block
        i = min(bisect_left(self.lasts, pair), len(self.blocks) - 1)
        block = self.blocks[i]
        insort(block, pair)
        self.lasts[i] = block[-1]
        if pair[1] < self.bests[i]:
            self.bests[i] = pair[1]
        if len(block) > 2 * self.load:
            self._split(i)

    def remove(self, pair: Pair) -> None:
        """Removes ``pair``; ``ValueError`` when it is not there."""
        i = bisect_left(self.lasts, pair)
        block = self.blocks[i] if i < len(self.blocks) else []
        j = bisect_left(block, pair)
        if j == len(block) or block[j] != pair:
            raise ValueError(f"{pair!r} is not in the family")
        del block[j]
        if len(self.blocks) == 1 and not block:
            self.blocks.clear()
            self.lasts.clear()
            self.bests.clear()
        elif len(block) < self.load // 2 and len(self.blocks) > 1:
            self._merge(i)
        else:
            self.lasts[i] = block[-1]
            if pair[1] == self.bests[i]:  # the block's best is gone: find the next
                self.bests[i] = min(r for _, r in block)

    def _split(self, i: int) -> None:
        block = self.blocks[i]
        half = block[self.load :]
        del block[self.load :]
        self.blocks.insert(i + 1, half)
        self.lasts[i : i + 1] = [block[-1], half[-1]]
        self.bests[i : i + 1] = [min(r for _, r in block), min(r for _, r in half)]

    def _merge(self, i: int) -> None:
        """Merges block ``i`` with a neighbour, split again when that is too big."""
        k = i - 1 if i > 0 else i
        merged = self.blocks[k] + self.blocks[k + 1]
        self.blocks[k : k + 2] = [merged]
        self.lasts[k : k + 2] = [merged[-1]]
        self.bests[k : k + 2] = [min(r for _, r in merged)]
        if len(merged) > 2 * self.load:
            self._split(k)

    def irange(
        self,
        minimum: tuple[Any, Any] | None = None,
        maximum: tuple[Any, Any] | None = None,
        reverse: bool = False,
    ) -> Iterator[Pair]:
        """The pairs from ``minimum`` to ``maximum``, both included (``None``: no bound), in
        order or in reverse order, as ``SortedList.irange``."""
        blocks, lasts = self.blocks, self.lasts
        # (block, position) of the first pair at or above minimum and of the first above maximum
        if minimum is None:
            i0, j0 = 0, 0
        else:
            i0 = bisect_left(lasts, minimum)
            j0 = bisect_left(blocks[i0], minimum) if i0 < len(blocks) else 0
        if maximum is None:
            i1, j1 = len(blocks), 0
        else:
            i1 = bisect_right(lasts, maximum)
            j1 = bisect_right(blocks[i1], maximum) if i1 < len(blocks) else 0
        if (i0, j0) >= (i1, j1):
            return
        if i0 == i1:
            runs = [blocks[i0][j0:j1]]
        else:
            runs = [blocks[i0][j0:], *blocks[i0 + 1 : i1]]
            if j1:
                runs.append(blocks[i1][:j1])
        if reverse:
            for run in reversed(runs):
                yield from reversed(run)
        else:
            for run in runs:
                yield from run

    def nearest_better(self, at: Any, rank: Rank, offer: int) -> tuple[Any, Any]:
        """The keys of the first pair better than ``rank`` and not ``offer``'s own going down
        from ``(at, _TOP)`` and of the first going up from ``(at, _BOTTOM)`` (``None``: there
        is none). A block whose best rank is better holds such a pair unless that best is
        ``offer``'s own pair, so the scan of a block may find nothing, but of one block only
        on each side."""
        return self._below(at, rank, offer), self._above(at, rank, offer)

    def _below(self, at: Any, rank: Rank, offer: int) -> Any:
        blocks, bests = self.blocks, self.bests
        top = (at, _TOP)
        # the first block with a pair above ``top``: its pairs below it, then whole blocks
        i = bisect_right(self.lasts, top)
        if i < len(blocks) and bests[i] < rank:
            block = blocks[i]
            for j in range(bisect_right(block, top) - 1, -1, -1):
                key, r = block[j]
                if r < rank and r[1] != offer:
                    return key
        for b in range(i - 1, -1, -1):
            if bests[b] < rank:
                for key, r in reversed(blocks[b]):
                    if r < rank and r[1] != offer:
                        return key
        return None

    def _above(self, at: Any, rank: Rank, offer: int) -> Any:
        blocks, bests = self.blocks, self.bests
        bottom = (at, _BOTTOM)
        # the first block with a pair above ``bottom``: its pairs from there, then whole blocks
        i = bisect_left(self.lasts, bottom)
        if i < len(blocks) and bests[i] < rank:
            block = blocks[i]
            for j in range(bisect_left(block, bottom), len(block)):
                key, r = block[j]
                if r < rank and r[1] != offer:
                    return key
        for b in range(i + 1, len(blocks)):
            if bests[b] < rank:
                for key, r in blocks[b]:
                    if r < rank and r[1] != offer:
                        return key
        return None


class _Ranks:
    """A sparse table over the family's ``(key, rank)`` pairs in key order: ``levels[j][i]``
    is the best rank of the ``2 ** j`` pairs from ``i``, so the best of any run is the better
    of two overlapping entries. Registering the benchmark's 100,000 wide watches scanned
    some 450 entries each without it (1 ms a watch). Built in ``n log n`` and queried in
    ``log n``, it is dropped by any change to the family and built again at the next
    registration: registrations come in runs between changes (the benchmark's 100,000 at
    once), and a lone one pays ``n log n`` where a scan of its range would have been ``n``."""

    def __init__(self, pairs: list[tuple[Any, Rank]]) -> None:
        self.points = [(key, 0) for key, _ in pairs]
        level = [rank for _, rank in pairs]
        self.levels = [level]
        width = 1
        while 2 * width <= len(pairs):
            level = [min(level[i], level[i + width]) for i in range(len(level) - width)]
            self.levels.append(level)
            width *= 2

    def best(self, span: Span) -> Rank | None:
        start = bisect_left(self.points, span.lower)
        stop = bisect_right(self.points, span.upper)
        if stop <= start:
            return None
        j = (stop - start).bit_length() - 1
        level = self.levels[j]
        return min(level[start], level[stop - (1 << j)])


class OfferBook:
    """The open offers and the families built over them. Families are found for a changed
    offer by its subject (literal subjects through a dict, patterns by a loop: a market
    has few of them) and by the families that hold the offer already. A family is built
    when a watch asks for it and dropped when its last watch leaves (``drop``): every event
    loops over the patterns, and users may create and delete watches at will."""

    def __init__(self) -> None:
        self.offers = OpenOffers()
        self.families: dict[FamilyName, Family] = {}
        self._literal: dict[str, list[Family]] = {}
        self._patterns: list[Family] = []
        self._member: dict[int, set[FamilyName]] = {}

    def family(self, name: FamilyName) -> Family:
        """The family, built from the open offers the first time it is asked for."""
        family = self.families.get(name)
        if family is None:
            family = self.families[name] = Family(name)
            if family.pattern.is_literal:
                self._literal.setdefault(name.subject, []).append(family)
            else:
                self._patterns.append(family)
            for offer, row in self.offers.offers.items():
                if (entry := family.entry(offer, row)) is not None:
                    family.put(offer, entry)
                    self._member.setdefault(offer, set()).add(name)
        return family

    def drop(self, name: FamilyName) -> None:
        """Forgets the family and every way to it (``KeyError`` if it is not built): what it
        keeps is built again from the open offers if a watch asks for it again, as on the
        first time, so a family dropped and built again is a new one."""
        family = self.families.pop(name)
        if family.pattern.is_literal:
            same = self._literal[name.subject]
            same.remove(family)
            if not same:
                del self._literal[name.subject]
        else:
            self._patterns.remove(family)
        for offer in family.entries:
            members = self._member[offer]
            members.discard(name)
            if not members:
                del self._member[offer]

    def apply(self, e: Event) -> list[Delta]:
        """Applies one event; the deltas of the families it changed."""
        offer = self.offers.apply(e)
        if offer is None:
            return []
        row = self.offers.get(offer)
        candidates = {self.families[n] for n in self._member.get(offer, ())}
        subject = None if row is None else row.values.get("subject")
        if isinstance(subject, str):
            candidates.update(self._literal.get(subject, ()))
            candidates.update(f for f in self._patterns if f.pattern.matches(subject))
        deltas = []
        members = self._member.setdefault(offer, set())
        for family in sorted(candidates, key=lambda f: str(f.name)):
            delta = family.put(offer, family.entry(offer, row))
            if offer in family.entries:
                members.add(family.name)
            else:
                members.discard(family.name)
            if delta is not None:
                deltas.append(delta)
        if not members:
            del self._member[offer]
        return deltas
