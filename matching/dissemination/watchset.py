"""The range watches one process holds, by family, in interval indexes.

``affected`` is the stateless filter every strategy ends in: given a delta it finds,
through ``IntervalIndex.between`` (never a loop over the watches), the watches whose
answer the change may move, and gives each its answer after the change. It needs no
offers: a gain names its entry and a loss carries its staircases (``offers``).

A sample of each large family sits in a second index so that the optimizer can estimate
how many watches a delta reaches without walking all of them.
"""

from __future__ import annotations

import zlib
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field

from matching.index.intervals import IntervalIndex, Span
from matching.subscriptions.model import WatchQuery
from matching.subscriptions.watches import Answer

from .offers import Delta, FamilyName, family_of, outer

SAMPLE_RATE = 16  # one watch in this many sits in the sample index
SAMPLE_MIN = 64  # below this many sampled watches the full index is counted instead
RECOUNT = 4  # below this many sampled watches reached, the full index is counted instead


@dataclass
class _Members:
    index: IntervalIndex = field(default_factory=IntervalIndex)
    sample: IntervalIndex = field(default_factory=IntervalIndex)


class WatchSet:
    def __init__(self) -> None:
        self._families: dict[FamilyName, _Members] = {}
        self.spans: dict[Hashable, Span] = {}
        self.family: dict[Hashable, FamilyName] = {}

    def __len__(self) -> int:
        return len(self.spans)

    def __contains__(self, watch: Hashable) -> bool:
        return watch in self.spans

    def add(self, watch: Hashable, q: WatchQuery) -> tuple[FamilyName, Span]:
        """Holds ``watch`` (``ValueError`` from ``family_of`` if it is not a range watch)."""
        name, span = family_of(q)
        self.add_span(watch, name, span)
        return name, span

    def add_span(self, watch: Hashable, name: FamilyName, span: Span) -> None:
        if watch in self.spans:
            self.remove(watch)
        members = self._families.setdefault(name, _Members())
        members.index.add(watch, span)
        if _sampled(watch):
            members.sample.add(watch, span)
        self.spans[watch] = span
        self.family[watch] = name

    def remove(self, watch: Hashable) -> None:
        name = self.family.pop(watch)
        del self.spans[watch]
        members = self._families[name]
        members.index.remove(watch)
        if watch in members.sample:
            members.sample.remove(watch)
        if not len(members.index):
            del self._families[name]

    def families(self) -> Iterator[FamilyName]:
        return iter(self._families)

    def size(self, name: FamilyName) -> int:
        members = self._families.get(name)
        return 0 if members is None else len(members.index)

    def affected(self, delta: Delta) -> dict[Hashable, Answer | None]:
        """The watches the delta reaches and their answers after it (a gain's answer wins
        over a loss's for a watch both reach: the two agree, the gain is cheaper)."""
        members = self._families.get(delta.family)
        found: dict[Hashable, Answer | None] = {}
        if members is None:
            return found
        if delta.loss is not None:
            loss = delta.loss
            for watch in members.index.between(Span.point(loss.at), outer(loss.lo, loss.hi)):
                found[watch] = loss.answer_for(self.spans[watch])
        if delta.gain is not None:
            gain = delta.gain
            answer = gain.entry.answer
            for watch in members.index.between(Span.point(gain.entry.key), outer(gain.lo, gain.hi)):
                found[watch] = answer
        return found

    def estimate(self, delta: Delta) -> float:
        """How many watches ``affected`` would return, from the sample
        when the family is large. A sampled count below ``RECOUNT`` is counted again on the
        whole index: one sampled watch stands for ``SAMPLE_RATE`` of them, so a change
        reaching a handful would read as 16 or 32 (the few-affected benchmark's misses),
        and a search that finds few costs little."""
        members = self._families.get(delta.family)
        if members is None:
            return 0.0
        if len(members.sample) >= SAMPLE_MIN:
            scale = len(members.index) / len(members.sample)
            sampled = _reach(members.sample, delta)
            if sampled >= RECOUNT:
                return sampled * scale
        return float(_reach(members.index, delta))


def _reach(index: IntervalIndex, delta: Delta) -> int:
    """The watches of ``index`` that ``affected`` would return: each once, as a watch that
    both parts reach is updated once (a set only then: a wide change's single part may
    reach thousands)."""
    parts = []
    if delta.loss is not None:
        loss = delta.loss
        parts.append(index.between(Span.point(loss.at), outer(loss.lo, loss.hi)))
    if delta.gain is not None:
        gain = delta.gain
        parts.append(index.between(Span.point(gain.entry.key), outer(gain.lo, gain.hi)))
    if len(parts) < 2:
        return sum(len(p) for p in parts)
    return len(set(parts[0]).union(parts[1]))


def _sampled(watch: Hashable) -> bool:
    return zlib.crc32(str(watch).encode()) % SAMPLE_RATE == 0
