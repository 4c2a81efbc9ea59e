"""The range watches one process holds, by family, in interval indexes.

``affected`` is the stateless filter every strategy ends in: given a delta it finds,
through ``IntervalIndex.between`` (never a loop over the watches), the watches whose
answer the change may move, and gives each its answer after the change. It needs no
offers: a gain names its entry and a loss carries its staircases (``offers``).

Each family's spans are also held as points for rectangle counts (``counts``), so that the
optimizer learns how many watches a delta reaches (``reach``) without visiting them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field

from matching.index.intervals import IntervalIndex, Span
from matching.subscriptions.language.model import WatchQuery
from matching.subscriptions.watches.watch import Answer

from .counts import Rectangle, SpanCounts, overlap, rectangle
from .offers import Delta, FamilyName, family_of, outer


@dataclass
class _Members:
    index: IntervalIndex = field(default_factory=IntervalIndex)
    counts: SpanCounts = field(default_factory=SpanCounts)


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
        members.counts.add(watch, span)
        self.spans[watch] = span
        self.family[watch] = name

    def remove(self, watch: Hashable) -> None:
        name = self.family.pop(watch)
        del self.spans[watch]
        members = self._families[name]
        members.index.remove(watch)
        members.counts.discard(watch)
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

    def reach(self, delta: Delta) -> int:
        """How many watches ``affected`` returns for ``delta``, counted from the delta's
        ranges without visiting a watch: each part's rectangle, less the watches both parts
        reach (they are updated once)."""
        members = self._families.get(delta.family)
        if members is None:
            return 0
        loss, gain = _boxes(delta)
        counts = members.counts
        return counts.count(loss) + counts.count(gain) - counts.count(overlap(loss, gain))


def _boxes(delta: Delta) -> tuple[Rectangle | None, Rectangle | None]:
    """The rectangles of the spans the delta's loss and gain reach (``affected``'s filters)."""
    loss = gain = None
    if delta.loss is not None:
        loss = rectangle(Span.point(delta.loss.at), outer(delta.loss.lo, delta.loss.hi))
    if delta.gain is not None:
        key = delta.gain.entry.key
        gain = rectangle(Span.point(key), outer(delta.gain.lo, delta.gain.hi))
    return loss, gain
