"""What the groups of patterns run on one record per start have in common (issue 20).

``patterns/thresholds.py`` (patterns equal but for a threshold's factor) and
``patterns/bounds.py`` (equal but for two literal bounds) each keep, instead of one
instance per pattern, one record per start for all their members; each record holds the
*generation* of members that stood when it started (the members sorted by the literal
the group bisects on), so that members joining later never wait on it. This module holds
the members, the generations and the bookkeeping both do the same way: joining, leaving,
``WITHIN`` per member, the instances a member holds (``state_limit``, and the instances
it is given when it goes on alone), and the completed instance that the members a later
event completes share.
"""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from matching.subscriptions.events import Event

from .automaton import Automaton, Instance

Completed = tuple[tuple[int, ...], Instance]
Done = dict["GroupMember", list[Completed]]  # the members an event completed, with what


@dataclass(eq=False, slots=True)
class GroupMember:
    """One pattern of a group: its own ``automaton`` (its ``WHERE``, its ``data``, and its
    instances once it leaves), ``literal`` (what the group sorts members by: a threshold's
    factor, a step's bound), ``start_literal`` (a bound group's bound on the first event),
    ``within``, ``limit`` (its ``state_limit``) and ``payload`` (what the caller holds it
    by); ``order`` sorts members by ``literal``. Members of one group with equal ``view``
    have equal ``SELECT``s, so one completed instance has the same ``data`` for each of
    them (the rest of their patterns is the group's key). ``where``: whether its pattern
    has a ``WHERE``. Slots: an event reads a few fields of each member it completes, of
    thousands spread over the heap."""

    payload: Any
    automaton: Automaton
    literal: Decimal
    start_literal: Decimal | None
    within: dt.timedelta | None
    limit: int
    order: tuple[Decimal, int]
    view: int
    gone: bool = False
    where: bool = field(init=False)

    def __post_init__(self) -> None:
        self.where = self.automaton.where is not None


@dataclass(frozen=True, eq=False, slots=True)
class Generation:
    """The members sorted by ``literal`` while none joins or leaves (the records started
    then hold it), their ``literals`` in that order, their ``start_literals`` sorted, the
    longest ``within`` (``None``: some member has none) and the smallest ``limit``."""

    members: tuple[GroupMember, ...]
    literals: tuple[Decimal, ...]
    start_literals: tuple[Decimal, ...]
    member_starts: tuple[Decimal | None, ...]  # each member's start_literal, in its order
    within: dt.timedelta | None
    limit: int
    # where each member stands in ``members``, filled when first asked
    positions: dict[int, int] = field(default_factory=dict)

    def position(self, member: GroupMember) -> int | None:
        if not self.positions and self.members:
            self.positions.update((id(m), i) for i, m in enumerate(self.members))
        return self.positions.get(id(member))


def generation(members: tuple[GroupMember, ...]) -> Generation:
    windows = [m.within for m in members if m.within is not None]
    longest = max(windows, default=dt.timedelta(0)) if len(windows) == len(members) else None
    return Generation(
        members,
        tuple(m.literal for m in members),
        tuple(sorted(m.start_literal for m in members if m.start_literal is not None)),
        tuple(m.start_literal for m in members),
        longest,
        min((m.limit for m in members), default=0),
    )


class Record:
    """One start ``a`` (``start``: an instance at the step with ``a`` bound, ``event``
    that ``a``) and the ``generation`` of members that stood when it started."""

    __slots__ = ("start", "generation", "event")

    def __init__(self, start: Instance, generation: Generation) -> None:
        self.start = start
        self.generation = generation
        self.event: Event = start.bound[0]


def young(record: Record, now: dt.datetime) -> bool:
    """Whether some member of the record's generation may still wait on it at ``now``."""
    within = record.generation.within
    return within is None or now - record.event.time <= within


def _order(member: GroupMember) -> tuple[Decimal, int]:
    return member.order


class RecordGroup(ABC):
    """The members and records of one group (``records``: the starts some member may
    still wait on, truthy exactly while the step's source matters, as ``Node.waiting`` is
    for an automaton's step); ``now`` is the time of the last event offered."""

    def _begin(self) -> None:
        self.records: list[Any] = []
        self.touched = 0  # records offered an event (``multi.py``'s counts)
        self.now: dt.datetime | None = None
        self._serials = itertools.count()
        self._views: dict[tuple[Any, ...], int] = {}  # a SELECT's view number
        self.generation = generation(())

    @property
    def waiting(self) -> list[Any]:
        return self.records

    @property
    def members(self) -> tuple[GroupMember, ...]:
        return self.generation.members

    def _add(
        self,
        payload: Any,
        automaton: Automaton,
        limit: int,
        literal: Decimal,
        start_literal: Decimal | None = None,
    ) -> GroupMember:
        """Add a pattern holding no instance (of this group's key): it waits on the
        starts from now on."""
        member = GroupMember(
            payload,
            automaton,
            literal,
            start_literal,
            automaton.within,
            limit,
            (literal, next(self._serials)),
            self._views.setdefault(automaton.pattern.select, len(self._views)),
        )
        members = list(self.generation.members)
        bisect.insort(members, member, key=_order)
        self.generation = generation(tuple(members))
        return member

    def leave(self, member: GroupMember) -> None:
        """Take ``member`` out: no record completes or counts it any more."""
        member.gone = True
        self.generation = generation(tuple(m for m in self.generation.members if not m.gone))

    def advance(self, e: Event, *, offer: bool, start: bool) -> Done | None:
        """Offer ``e`` (``offer``: it passes the step's source) to the records, then start
        one (``start``: it passes the group's first source) if some member waits on it;
        the members it completed, each with its instances in the order of their first
        events (as ``Automaton.advance`` gives them before ``WHERE``). ``None``, with
        nothing changed, when the group cannot follow ``e`` exactly: a start whose
        records would raise for some member (an arithmetic overflow, which alone fails
        that pattern), or after which some member could hold more instances than its
        ``state_limit``."""
        now = e.time
        # every record held is open (those an offer closed are dropped below)
        kept = [r for r in self.records if young(r, now)]
        try:
            new = self._start(e) if start and self.generation.members else None
        except ArithmeticError:
            return None
        if new is not None and len(kept) + 1 > self.generation.limit:
            return None
        self.now = now
        done: dict[GroupMember, list[Completed]] = {}
        if offer and kept:
            v = e.values.get(self.attribute)
            if v is not None:
                for record in kept:
                    self._offer(record, e, v, now, done)
                kept = [r for r in kept if self._open(r)]
        if new is not None:
            kept.append(new)
        self.records = kept
        return done

    # what each kind of group does its own way
    attribute: str  # the candidate's attribute its members' conditions compare

    @abstractmethod
    def _open(self, record: Any) -> bool:
        """Whether some member of ``record``'s generation has not been completed on it."""
        ...

    @abstractmethod
    def _start(self, e: Event) -> Record | None:
        """The record ``e`` starts (``None``: no member waits on it)."""
        ...

    @abstractmethod
    def _offer(self, record: Any, e: Event, v: Any, now: dt.datetime, done: Done) -> None:
        """Offer ``e`` (its compared value ``v``) to ``record``; add what it completes."""
        ...

    @abstractmethod
    def waits(self, record: Any, member: GroupMember) -> bool:
        """Whether ``member`` has not been completed on ``record`` (its own rule)."""
        ...

    def waiting_on(self, member: GroupMember) -> list[Event]:
        """The first events of the instances ``member`` holds, oldest first: the starts it
        waits on that ``WITHIN`` had not dropped at the last event offered."""
        return [
            record.event
            for record in self.records
            if record.generation.position(member) is not None
            and self.waits(record, member)
            and self._kept(record, member)
        ]

    def live(self, member: GroupMember) -> int:
        """How many instances ``member`` holds (``state_limit`` counts them)."""
        return len(self.waiting_on(member))

    def _kept(self, record: Record, member: GroupMember) -> bool:
        return (
            self.now is None
            or member.within is None
            or self.now - record.event.time <= member.within
        )


def hand_out(
    record: Record,
    taken: Iterable[GroupMember],
    e: Event,
    age: dt.timedelta,
    done: Done,
) -> None:
    """Add to ``done`` the instance ``record``'s start and ``e`` make, one object for
    every member of ``taken`` that has not left and whose ``WITHIN`` the ``age`` of the
    start does not exceed (alone, that instance was dropped before ``e`` was offered)."""
    completed: Completed | None = None
    for m in taken:
        if m.gone or (m.within is not None and age > m.within):
            continue
        if completed is None:
            a = record.event
            completed = ((a.seq, e.seq), Instance(2, (a, e), (None, None), {}, (), 0))
        found = done.get(m)
        if found is None:
            done[m] = [completed]
        else:
            found.append(completed)
