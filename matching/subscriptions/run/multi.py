"""Many live subscriptions evaluated together (SPEC 8.3's implementation note, seed 003).

A ``SubscriptionSet`` holds live ``Subscription`` objects (the one evaluator of
``evaluator.py``) under ids and feeds each event only to those it can concern:

* Every *source* sits in one matching index (``matching.index``, SPEC 8.2): a form 1
  subscription's conjuncts (as ``matching.index.form1`` splits them), the first source of
  each side of a form 3 pattern, and the source of each pattern step that has instances
  waiting at it (a step with none is taken out of the index, Cayuga's active-node idea:
  an event then does not even visit it). An event walks the index once; the sources it
  returns, after the checks the tree could not hold, are the ones it passes.
* A form 1 subscription is pushed only the events that pass its conjuncts; a pattern only
  the events that pass one of its sources, with those answers routed to its automata
  (``PatternEngine.route``), so no static filter is evaluated twice. A step's source is
  indexed together with the conjuncts of the step's condition that compare the incoming
  event with a literal (``NEXT{... AND b.price < 0.95}``): an event failing one of them
  takes the filter edge in every instance waiting there, so the pattern need not see it
  at that step. Inside a pattern, the instances waiting on an equality parameter are
  hashed by its value, and those waiting on an order with a value bound earlier
  (``b.price > 1.05 * a.price``) sorted by it (``automaton.py``), so the event touches
  only the instances of its own value that it can advance.
* Form 2 (composite) subscriptions, and any other kind, fall back to being pushed every
  event: their joins are not static tests. A form 4 watch is pushed every event until its
  first live one (which registers it); from then on only the events that can change the
  open offers (``watches.offers.CHANGING``; any other leaves its answer as it is, so
  pushing it would output nothing), and a range watch whose subject test names one
  subject only those of that subject (an offer's events all carry its market's subject,
  and an offer of another subject never qualifies). Its state then lacks the other
  subjects' offers, which no answer of it reads.
* Patterns of one side that are equal but for their ``WHERE`` and ``WITHIN`` ("prices
  rising for at least D minutes", one per D; "offer K's best value fell three times
  within W minutes", one per W) share one automaton compiled without ``WHERE`` and with
  the longest of their windows (``share``, the default): its sources are indexed once,
  an event advances it once, and each member is pushed only when its own ``WHERE``
  passes an instance the event completed or the instances it holds exceed its
  ``state_limit``. A pattern joins only while neither it nor the shared automaton holds
  an instance, so the shared instances are at every event the ones it would hold alone
  with the longest window (``WHERE`` is read once an instance is complete and moves
  nothing); otherwise a new shared automaton is started for it. Instances move
  independently of each other and ``WITHIN`` only drops them, so a member with a
  shorter window holds the shared instances its window keeps (``_Shared``). A member
  taken out (``remove``) or asked for (``subscription``) is given a copy of those.
  ``advance_members`` does not share: its evaluators are kept after the pass.
* Patterns of one step that are equal but for the factor of a threshold (``b.price > k *
  a.price``), ``WITHIN``, ``WHERE`` and ``SELECT`` ("a trade, then the next more than p%
  higher", one per p and window) run as one ``ThresholdGroup`` (``share`` too): one record
  per start instead of one instance per pattern, and an event completes the members whose
  thresholds it passes, found by bisection over the members sorted by factor
  (``patterns/thresholds.py`` says why that is exact, and when the group hands its members
  their own instances and lets them go on alone). Only the completed members are pushed.
* Patterns of one step that are equal but for a literal bound of their first ``FILTER``
  and one of the step's condition (``price > 1.00`` ... ``b.price < 0.95``), ``WITHIN``,
  ``WHERE`` and ``SELECT`` run as one ``BoundGroup`` the same way (``share`` too;
  ``patterns/bounds.py`` says why that is exact).
* The members a shared automaton or group completed instances for are given their
  outputs at once (``evaluator.deliver_all``): each instance's ``data`` built once per
  ``SELECT`` and shared by their notifications (which no consumer changes), numbered as
  their own ``push`` would number them.

Why the outputs are those of pushing every event to every subscription (the hypothesis
test compares them): an event a form 1 subscription is not pushed fails its conjuncts, so
pushing it would output nothing, except that a subscription's first live event ends its
history and the first event at or after its end completes it; the set pushes the next
event in full to a subscription just added, and keeps a heap of end times to push the
completing event. A pattern not pushed an event only misses the expiry of ``WITHIN``,
which its next pushed event does first (time does not decrease, so the same instances go),
and its live count can only have fallen in between, so ``state_limit`` fires at the same
event.

Outputs are given per subscription in the order its own evaluation makes them; across
subscriptions in one event, in the order they were evaluated.

Visibility (SPEC 5.6): ``push`` may be told which subscriptions may see the event; the
others are not pushed it at all, as if it were not in their stream. A set that shares
cannot be told that; one made with ``share=False`` and ``public`` event types (the engine's)
shares all the same among the patterns every source of which needs a public type
(``public_only``), and is told ``visible`` for the events of the other types only: such an
event passes none of those patterns' sources, so the shared automata and groups are not
offered it, and each of their members sees every event that reaches them. ``advance_members``
runs one stretch of the log through many subscriptions that stand at different places in
it (history or live, each with its own cursor and seam), reading each event once: what the
live advance does for all active subscriptions together.

A subscription whose evaluation raises is taken out of the set with a ``Failed`` output,
and the others go on: one subscription's failure must not stop the rest.
"""

from __future__ import annotations

import bisect
import datetime as dt
import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal
from functools import partial
from operator import attrgetter
from typing import Any

from matching import Interval, Type, Wildcard
from matching.index import MatchingIndex, narrow, split_conditions
from matching.index.tree import IndexTest
from matching.subjects import ONE, REST, SubjectError, SubjectPattern, compile_pattern
from matching.subscriptions.events import Event, event_from_dict
from matching.subscriptions.language.model import AtomicQuery, SubjectTest, WatchQuery
from matching.subscriptions.language.schema import EVENT_SCHEMA
from matching.subscriptions.patterns.automaton import Automaton, Instance, Node, PatternEngine
from matching.subscriptions.patterns.bounds import BoundGroup, BoundShape, bound_shape
from matching.subscriptions.patterns.groups import GroupMember
from matching.subscriptions.patterns.model import (
    All,
    Compare,
    Cond,
    Literal,
    Matches,
    Pattern,
    PatternQuery,
    Ref,
    Step,
)
from matching.subscriptions.patterns.thresholds import Shape, ThresholdGroup, threshold_shape
from matching.subscriptions.patterns.where import WhereIndex
from matching.subscriptions.watches.offers import CHANGING

from .evaluator import Output, Subscription, deliver_all
from .limits import CHECK_EVERY

_FLIP = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_LITERAL_TYPES: Mapping[type, tuple[Type, ...]] = {
    Decimal: (Type.INT, Type.DECIMAL),
    str: (Type.STRING,),
    dt.datetime: (Type.TIMESTAMP,),
}
# A hash key is an event's value: its ints stay ints (literals are read as decimals).
_KEY_TYPES: Mapping[type, tuple[Type, ...]] = {**_LITERAL_TYPES, int: (Type.INT, Type.DECIMAL)}

Completed = tuple[tuple[int, ...], Instance]  # an instance an event completed, by its seqs
Group = ThresholdGroup | BoundGroup  # a group of patterns run on one record per start
Data = dict[str, Any]


@dataclass(frozen=True)
class StaticSplit:
    """A static FILTER as the index takes it: ``subject`` and ``tests`` in the tree, and
    ``exact`` when they are the whole filter (otherwise the filter itself is checked on
    each event the tree returns)."""

    subject: SubjectPattern | None
    tests: tuple[IndexTest, ...]
    exact: bool


def split_filter(condition: Cond | None) -> StaticSplit:
    """The tests of a pattern source's static ``condition`` that the index can hold.

    A top-level conjunct goes to the tree when it compares a bare attribute with a literal
    of the attribute's type by ``=``, ``<``, ``<=``, ``>`` or ``>=`` (``subject = 'a.b'``
    becomes a subject pattern), or is a positive ``subject MATCHES``; a second test of an
    attribute is met with the first (``narrow``: ``offer >= 10 AND offer <= 20`` is one
    range). Anything else (``OR``, ``!=``, arithmetic, a second test ``narrow`` cannot meet
    with the first) leaves the split inexact, and the filter is then checked whole on the
    tree's candidates.
    """
    if condition is None:
        return StaticSplit(None, (), True)
    parts = condition.parts if isinstance(condition, All) else (condition,)
    subject: SubjectPattern | None = None
    tests: dict[str, Interval | Wildcard] = {}
    exact = True
    for part in parts:
        if isinstance(part, Matches):
            if part.negated or subject is not None or part.ref.attribute != "subject":
                exact = False
            else:
                subject = part.compiled
            continue
        found = _comparison(part) if isinstance(part, Compare) else None
        if found is None:
            exact = False
            continue
        attribute, op, value = found
        literal_subject = _literal_subject(value) if attribute == "subject" and op == "=" else None
        if literal_subject is not None and subject is None:
            subject = literal_subject
        elif literal_subject is not None or not narrow(tests, attribute, _interval(op, value)):
            exact = False
    return StaticSplit(subject, tuple(tests.items()), exact)


def _step_filter(step: Step, alias: str) -> Cond | None:
    """What an event must pass to concern the instances waiting at ``step`` (bound to
    ``alias``): its source's filter and the top-level conjuncts of its condition that
    compare ``alias.x`` (not ``.last``) with a literal, written as filter conjuncts.

    A check of this filter on an event (``_Source.check``, when the index cannot hold it
    all) reads only its source's filter: the extra conjuncts are the condition's, which
    the automaton evaluates anyway."""
    parts = step.condition.parts if isinstance(step.condition, All) else (step.condition,)
    extra: list[Cond] = []
    for part in parts:
        if not isinstance(part, Compare):
            continue
        sides = [part.left, part.right]
        for i, (mine, other) in enumerate(((part.left, part.right), (part.right, part.left))):
            if (
                isinstance(mine, Ref)
                and mine.alias == alias
                and not mine.last
                and isinstance(other, Literal)
            ):
                sides[i] = Ref(None, mine.attribute)
                extra.append(Compare(part.op, sides[0], sides[1]))
                break
    if not extra:
        return step.source.filter
    own = step.source.filter
    mine_parts = () if own is None else own.parts if isinstance(own, All) else (own,)
    whole = (*mine_parts, *extra)
    return whole[0] if len(whole) == 1 else All(whole)


def _comparison(c: Compare) -> tuple[str, str, Any] | None:
    """``(attribute, op, literal)`` for a bare attribute against a literal of its type."""
    for ref, literal, op in ((c.left, c.right, c.op), (c.right, c.left, _FLIP.get(c.op))):
        if (
            isinstance(ref, Ref)
            and ref.alias is None
            and isinstance(literal, Literal)
            and op in _FLIP
            and EVENT_SCHEMA.get(ref.attribute) in _LITERAL_TYPES.get(type(literal.value), ())
        ):
            return ref.attribute, op, literal.value
    return None


def _literal_subject(value: str) -> SubjectPattern | None:
    """``value`` as a pattern that holds exactly that subject (none if it is not one)."""
    try:
        pattern = compile_pattern(value)
    except SubjectError:
        return None
    return None if ONE in pattern.tokens or REST in pattern.tokens else pattern


def _interval(op: str, v: Any) -> Interval:
    if op == "=":
        return Interval(v, True, v, True)
    if op in ("<", "<="):
        return Interval(None, False, v, op == "<=")
    return Interval(v, op == ">=", None, False)


@dataclass(frozen=True)
class Failed:
    """A subscription's evaluation raised ``error`` on the event ``seq`` (the last one it
    was given when nothing was being pushed); it is out of the set."""

    seq: int | None
    error: Exception


@dataclass
class Counts:
    """What evaluating events cost: ``events`` seen, index ``nodes`` visited, ``sources``
    the events passed (form 1 subscriptions and pattern sources, after the residual
    checks), ``evaluated`` subscription pushes, and pattern ``instances`` offered events
    (a threshold group's records count one each, whatever the members waiting on them)."""

    events: int = 0
    nodes: int = 0
    sources: int = 0
    evaluated: int = 0
    instances: int = 0


_NONE: frozenset[int] = frozenset()  # no source passed


@dataclass(eq=False)
class _Source:
    held: _Held
    side: int
    node: int  # 0: the first source; i: the source of step i
    check: Automaton | None  # the automaton whose filter is checked (an inexact split)
    split: StaticSplit
    active: bool = False
    keyed: tuple[str, Any] | None = None  # the waiting instances' one hash key, indexed
    # whether the index may test the step's hash key (None: not asked yet; _sole_key)
    keyable: bool | None = None


@dataclass(eq=False, slots=True)
class _Held:
    sub_id: Hashable
    sub: Subscription
    # "atomic", "pattern", "every" (pushed every event), "shared" (a _Shared's runner) or
    # "group" (a _Grouped's runner)
    kind: str
    rank: int  # evaluated in the order added
    sources: list[int] = field(default_factory=list)
    # a pattern's sources with what keeps each one in the index while it has instances
    # waiting (a node, a group's records; None for a first source, always in it)
    watch: list[tuple[Node | Group | None, int, _Source]] = field(default_factory=list)
    shared: _Shared | None = None  # a pattern run by a shared automaton: that one
    grouped: _Grouped | None = None  # a pattern run by a group of records (or its runner)
    member: GroupMember | None = None  # such a pattern's place in its group


@dataclass(eq=False)
class _Shared:
    """One automaton run for the ``members``, patterns of one side equal but for their
    ``WHERE`` and ``WITHIN`` (``key``: the pattern without them), which joined while it
    and they held no instance. It runs with the longest of their ``WITHIN``s (none if one
    has none), so that its instances are at every event each member's own and those of
    the members with a longer window than theirs (``windows``; ``uniform`` when every
    member's is the automaton's). ``runner`` holds it as a pattern whose sources are in
    the index, under an id of no subscription; members are kept in rank order."""

    key: Pattern
    runner: _Held
    members: list[_Held] = field(default_factory=list)
    where: WhereIndex = field(init=False)  # the members by WHERE
    limit: float = float("inf")  # the smallest state_limit of the members
    automaton: Automaton = field(init=False)  # the runner's, read once per event
    windows: dict[_Held, dt.timedelta | None] = field(default_factory=dict)  # WITHIN
    uniform: bool = True

    def __post_init__(self) -> None:
        self.where = WhereIndex(self.key.aliases)
        engine = self.runner.sub.engine
        assert isinstance(engine, PatternEngine)
        self.automaton = engine.sides[0]

    def add(self, held: _Held, within: dt.timedelta | None) -> None:
        """Take ``held`` as a member, while the automaton holds no instance: its window
        becomes the longest of the members'."""
        assert not self.automaton.live
        bisect.insort(self.members, held, key=_rank)
        self.windows[held] = within
        windows = self.windows.values()
        longest = None if None in windows else max(w for w in windows if w is not None)
        if longest != self.automaton.within:
            self.automaton.within = longest
            self.automaton.expiry = []  # none is alive
        self.uniform = all(w == longest for w in windows)
        self.limit = min(self.limit, held.sub.state_limit)

    def discard(self, held: _Held) -> None:
        """Take ``held`` out of the members (the automaton keeps its window)."""
        self.members.remove(held)
        self.where.remove(held)
        del self.windows[held]
        self.uniform = all(w == self.automaton.within for w in self.windows.values())
        self.limit = min((m.sub.state_limit for m in self.members), default=float("inf"))

    def narrow(
        self,
        passing: dict[_Held, list[Completed]],
        failed: dict[_Held, Exception],
        completed: list[Completed],
        now: dt.datetime,
    ) -> None:
        """Make ``WhereIndex.passing``'s answer over all the instances ``completed`` at
        ``now`` the members' own: each keeps those its window kept, and one whose
        ``WHERE`` raised is asked again on those alone (the others it would not hold)."""
        for held, mine in list(passing.items()):
            kept = self.in_window(held, mine, now)
            if kept:
                passing[held] = kept
            else:
                del passing[held]
        for held in list(failed):
            mine = self.in_window(held, completed, now)
            if mine is completed:
                continue  # it holds them all: it fails alone too
            engine = held.sub.engine
            assert isinstance(engine, PatternEngine)
            try:
                mine = engine.sides[0].passing(mine)
            except Exception as exc:  # it fails alone too, on one it holds
                failed[held] = exc
                continue
            del failed[held]
            if mine:
                passing[held] = mine

    def held_by(self, held: _Held) -> int:
        """How many instances the member ``held`` holds: the shared ones its window keeps."""
        return self.automaton.held_within(self.windows[held])

    def in_window(self, held: _Held, mine: list[Completed], now: dt.datetime) -> list[Completed]:
        """The instances of ``mine``, completed at ``now``, that the member ``held``'s own
        ``WITHIN`` had not dropped (alone, it would not have held the others)."""
        within = self.windows[held]
        if within is None or within == self.automaton.within:
            return mine
        limit = now - within
        return [c for c in mine if c[1].first.time >= limit]


@dataclass(eq=False)
class _Grouped:
    """A ``ThresholdGroup`` (``patterns/thresholds.py``) or ``BoundGroup``
    (``patterns/bounds.py``) in the set: ``runner`` holds its sources in the index under
    an id of no subscription; its members' payloads are their ``_Held``s."""

    key: Hashable
    runner: _Held
    group: Group


class SubscriptionSet:
    """Live subscriptions under ids, each event evaluated through one index walk.

    ``add`` takes a ``Subscription`` whose history (if any) has been pushed to it; from
    then on ``push`` feeds it live events. ``push`` returns ``(id, output)`` pairs; a
    subscription that completes or is suspended is dropped from the set once its last
    output is given. ``last`` holds the counts of the latest event, ``total`` their sums.
    """

    def __init__(
        self,
        order: Sequence[str] = ("type",),
        *,
        share: bool = True,
        public: frozenset[str] = frozenset(),
    ) -> None:
        self.index = MatchingIndex(order)
        self.share = share
        # With ``share=False``: the event types everyone sees (``schema.PUBLIC_TYPES``).
        # The patterns every source of which needs one of them are shared all the same
        # (``public_only``); ``push`` is then told ``visible`` for the other events only.
        self.public = public
        self._shared: dict[Pattern, _Shared] = {}  # by key, the one that new members join
        self._groups: dict[Hashable, _Grouped] = {}  # by key
        self._held: dict[Hashable, _Held] = {}
        self._sources: dict[int, _Source] = {}
        self._ids = itertools.count()
        self._fresh: dict[Hashable, _Held] = {}  # not pushed a live event yet
        self._every: dict[Hashable, _Held] = {}
        # Registered watches, by the one subject they watch ("" for any): pushed only the
        # events that can change them (the module docstring).
        self._watching: dict[str, dict[Hashable, _Held]] = {}
        self._ends: list[tuple[dt.datetime, int, _Held]] = []
        self.last = Counts()
        self.total = Counts()
        # A host's account of each member's work (the engine's per-owner budget): told
        # ``(sub_id, units)`` for each member pushed alone, one unit for the push, one per
        # pattern instance it offered the event, and ``CHECK_EVERY`` each time the member's
        # meter asks its interrupt (``limits.Meter``: join candidates, instances).
        self.charge: Callable[[Hashable, int], None] | None = None

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, sub_id: object) -> bool:
        return sub_id in self._held

    def subscription(self, sub_id: Hashable) -> Subscription:
        """The subscription held under ``sub_id``; one run by a shared automaton is first
        given a copy of its instances (its engine then stands where the set does)."""
        held = self._held[sub_id]
        if held.shared is not None:
            _own_state(held)
        if held.grouped is not None:
            _restart(held)
        return held.sub

    def add(self, sub_id: Hashable, sub: Subscription) -> None:
        """Hold ``sub`` under ``sub_id``; ``ValueError`` (nothing changed) if the id is
        already held or ``sub`` has finished."""
        if sub_id in self._held:
            raise ValueError(f"subscription {sub_id!r} is already in the set")
        if sub.finished:
            raise ValueError(f"subscription {sub_id!r} has finished: there is nothing to follow")
        kind = "every"
        if isinstance(sub.query, AtomicQuery):
            kind = "atomic"
        elif isinstance(sub.query, PatternQuery):
            kind = "pattern"
        held = _Held(sub_id, sub, kind, next(self._ids))
        self._held[sub_id] = held
        if held.kind == "every":
            self._every[sub_id] = held
            return
        if sub.end is not None:
            heapq.heappush(self._ends, (sub.end, held.rank, held))
        if sub.live:
            self._install(held)
        else:
            self._fresh[sub_id] = held

    def remove(self, sub_id: Hashable) -> Subscription:
        """Stop following ``sub_id`` and give its subscription back; ``KeyError`` (nothing
        changed) if it is not held."""
        held = self._held.pop(sub_id)
        self._fresh.pop(sub_id, None)
        self._every.pop(sub_id, None)
        watched = _watched_subject(held)
        watching = self._watching.get(watched)
        if watching is not None:
            watching.pop(sub_id, None)
            if not watching:  # a subject no watch follows any more is forgotten with it
                del self._watching[watched]
        self._drop_sources(held)
        shared = held.shared
        if shared is not None:
            _own_state(held)  # it goes on alone from where the shared automaton stands
            held.shared = None
            shared.discard(held)
            if not shared.members:
                self._drop_sources(shared.runner)
                if self._shared.get(shared.key) is shared:
                    del self._shared[shared.key]
        grouped, member = held.grouped, held.member
        if grouped is not None and member is not None:
            _restart(held)  # it goes on alone with the instances it holds in the group
            held.grouped = held.member = None
            grouped.group.leave(member)
            if not grouped.group.members:
                self._group_end(grouped)
        return held.sub

    def _drop_sources(self, held: _Held) -> None:
        for source_id in held.sources:
            self._deactivate(source_id, self._sources.pop(source_id))

    # -- the index ---------------------------------------------------------------------------

    def _install(self, held: _Held) -> None:
        """Put ``held``'s sources into the index (a pattern: the first sources, and the
        steps that have instances waiting)."""
        if held.kind == "atomic":
            assert isinstance(held.sub.query, AtomicQuery)
            parts = split_conditions(held.sub.query.conditions)
            source = _Source(held, -1, 0, None, StaticSplit(parts.subject, parts.tests, True))
            source_id = self._new_source(held, source)
            self.index.add(
                source_id, subject=parts.subject, tests=parts.tests, residual=parts.residual()
            )
            source.active = True
            return
        engine = held.sub.engine
        assert isinstance(engine, PatternEngine)
        shares = held.kind == "pattern" and (
            self.share or (bool(self.public) and public_only(held.sub.query, self.public))
        )
        key = _share_key(engine) if shares else None
        if key is not None:
            pattern = engine.sides[0].pattern
            shape = threshold_shape(pattern) or bound_shape(pattern)
            if shape is not None:
                self._join_group(held, shape)
            else:
                self._join(held, key)
            return
        for automaton in engine.sides:
            self._install_sources(held, automaton, automaton.nodes)
        self._reconcile(held)

    def _install_sources(
        self, held: _Held, automaton: Automaton, steps: Sequence[Node | Group]
    ) -> None:
        """Give each source of ``automaton`` a source of ``held`` in the index; that of
        step ``i`` is kept there while ``steps[i - 1]`` has instances waiting."""
        pattern = automaton.pattern
        filters = [
            pattern.first.filter,
            *(_step_filter(s, a) for s, a in zip(pattern.steps, pattern.aliases[1:], strict=True)),
        ]
        for node, condition in enumerate(filters):
            split = split_filter(condition)
            source = _Source(held, automaton.side, node, None if split.exact else automaton, split)
            waiting = None if node == 0 else steps[node - 1]
            held.watch.append((waiting, self._new_source(held, source), source))

    def _join_group(self, held: _Held, shape: Shape | BoundShape) -> None:
        """Run ``held`` (a pattern holding no instance, of ``shape``) by the threshold or
        bound group of its key, made if there is none."""
        grouped = self._groups.get(shape.key)
        engine = held.sub.engine
        assert isinstance(engine, PatternEngine)
        if grouped is None:
            if isinstance(shape, BoundShape):
                pattern = shape.runner
            else:
                pattern = replace(engine.sides[0].pattern, where=None, within=None)
            runner = Subscription(PatternQuery((pattern,)), now=held.sub.now)
            runner_engine = runner.engine
            assert isinstance(runner_engine, PatternEngine)
            group: Group
            if isinstance(shape, BoundShape):
                group = BoundGroup(shape, runner_engine.sides[0])
            else:
                group = ThresholdGroup(shape, runner_engine.sides[0])
            grouped = _Grouped(
                shape.key, _Held(_RunnerId(), runner, "group", next(self._ids)), group
            )
            grouped.runner.grouped = grouped
            self._groups[shape.key] = grouped
            self._install_sources(grouped.runner, group.automaton, (group,))
            self._reconcile(grouped.runner)
        held.member = grouped.group.join(held, engine.sides[0], shape, held.sub.state_limit)  # type: ignore[arg-type]  # the group of shape.key is of shape's kind
        held.grouped = grouped

    def _group_end(self, grouped: _Grouped) -> None:
        """Take ``grouped``'s sources out of the index and the group out of the set (unless
        a newer group of its key has taken its place)."""
        self._drop_sources(grouped.runner)
        if self._groups.get(grouped.key) is grouped:
            del self._groups[grouped.key]

    def _dissolve(self, grouped: _Grouped) -> list[_Held]:
        """End ``grouped``: each member goes on alone from the instances it holds in the
        group, its sources in the index; the members, in rank order."""
        self._group_end(grouped)
        members = sorted((m.payload for m in grouped.group.members), key=_rank)
        for held in members:
            _restart(held)
            held.grouped = held.member = None
            engine = held.sub.engine
            assert isinstance(engine, PatternEngine)
            self._install_sources(held, engine.sides[0], engine.sides[0].nodes)
            self._reconcile(held)
        return members

    def _join(self, held: _Held, key: Pattern) -> None:
        """Run ``held`` (a pattern holding no instance) by the shared automaton of ``key``,
        one made when there is none or the current one holds instances (the member would
        then not have them, and the automaton's window cannot change)."""
        shared = self._shared.get(key)
        if shared is None or shared.automaton.live:
            runner = Subscription(PatternQuery((key,)), now=held.sub.now)
            shared = _Shared(key, _Held(_RunnerId(), runner, "shared", next(self._ids)))
            shared.runner.shared = shared
            self._shared[key] = shared
            self._install(shared.runner)
        engine = held.sub.engine
        assert isinstance(engine, PatternEngine)
        shared.add(held, engine.sides[0].within)
        shared.where.add(held, engine.sides[0], held.rank)
        held.shared = shared

    def _new_source(self, held: _Held, source: _Source) -> int:
        source_id = next(self._ids)
        self._sources[source_id] = source
        held.sources.append(source_id)
        return source_id

    def _reconcile(self, held: _Held) -> None:
        """A pattern's step sources are in the index exactly while instances wait there;
        while all of a step's instances wait in the bucket of one hash key (``b.offer =
        a.offer``, every instance with the same offer), the key is one more test of its
        source: an event with another value would find no instance to offer itself to."""
        for node, source_id, source in held.watch:
            want = node is None or bool(node.waiting)
            keyed = _sole_key(node, source) if want and isinstance(node, Node) else None
            if want == source.active and keyed == source.keyed:
                continue
            self._deactivate(source_id, source)
            if want:
                tests = source.split.tests
                if keyed is not None:
                    tests = (*tests, (keyed[0], _interval("=", keyed[1])))
                self.index.add(source_id, subject=source.split.subject, tests=tests)
                source.active = True
            source.keyed = keyed

    def _deactivate(self, source_id: int, source: _Source) -> None:
        if source.active:
            self.index.remove(source_id)
            source.active = False

    # -- events ------------------------------------------------------------------------------

    def push(
        self,
        event: Event | Mapping[str, Any],
        visible: Callable[[Hashable], bool] | None = None,
    ) -> list[tuple[Hashable, Output | Failed]]:
        """The outputs one live event causes, as ``(subscription id, output)``. With
        ``visible``, only the subscriptions it accepts (by id) are pushed the event: not in
        a set that shares automata (``ValueError``), whose members could differ in it. A
        set sharing the patterns over ``public`` types is told ``visible`` for the events
        of the other types only (``ValueError`` for a public one): such an event passes
        no source of a shared automaton or group, which are not offered it."""
        if visible is not None and self.share:
            raise ValueError("a set that shares automata cannot be told who sees an event")
        e = event if isinstance(event, Event) else event_from_dict(event)
        if visible is not None and e.values.get("type") in self.public:
            raise ValueError("everyone sees an event of a public type: no visible is needed")
        counts = Counts(events=1)
        out: list[tuple[Hashable, Output | Failed]] = []
        sees = visible or _everyone

        charge = self.charge

        def evaluate(held: _Held, matched: bool = False) -> None:
            """Push ``e`` to ``held`` alone (``matched``: a form 1 subscription whose
            conjuncts the index found to pass, not checked again)."""
            counts.evaluated += 1
            before = _touched(held)
            interrupt = None
            if charge is not None and not matched:  # (a form 1 engine asks no interrupt)

                def interrupt() -> bool:
                    charge(held.sub_id, CHECK_EVERY)
                    return False

            try:
                outputs = held.sub.push(e, live=True, interrupt=interrupt, matched=matched)
            except Exception as exc:  # the others go on (module docstring)
                self.remove(held.sub_id)
                out.append((held.sub_id, Failed(e.seq, exc)))
                return
            sub_id = held.sub_id
            for output in outputs:  # (a loop: a generator a member cost more, at one output)
                out.append((sub_id, output))
            touched = _touched(held) - before
            counts.instances += touched
            if charge is not None:
                charge(sub_id, 1 + touched)
            if held.sub.finished:
                self.remove(sub_id)

        def deliver(
            held: _Held,
            mine: list[Completed],
            data: Callable[[Completed], Data],
            kept: int | None = None,
        ) -> None:
            """Give ``held``, a member of a shared automaton or group, the outputs of
            ``mine``, the instances the event completed for it, in order, with ``data``
            from the cache of this event (shared, not copied), and with ``kept``, the
            instances it now holds past its ``state_limit``, its suspension: what pushing
            it alone would give, as ``PatternEngine.event`` (one side: ordered by their
            events' ``seq``s) and then ``Subscription.deliver`` make them, without one push
            per pattern. Numbered straight into ``out``, after the members before it."""
            counts.evaluated += 1
            sub = held.sub
            try:
                sub.deliver_to(held.sub_id, e.seq, map(data, mine), kept, out)
            except Exception as exc:  # alone, it fails on this event
                fail(held, exc)
                return
            if sub.finished:
                self.remove(held.sub_id)

        def share_out(members: Sequence[_Held], units: int) -> None:
            """A shared automaton's or group's work on this event, charged to its members
            in equal parts (rounded up): an owner pays its share of what runs for it."""
            assert charge is not None
            if members:
                part = -(-units // len(members))
                for member in members:
                    charge(member.sub_id, part)

        def fail(held: _Held, exc: Exception) -> None:
            """``held`` (a member) fails on this event: out of the set, with ``Failed``."""
            failing(held.sub_id, exc)

        def failing(sub_id: Hashable, exc: Exception) -> None:
            self.remove(sub_id)
            out.append((sub_id, Failed(e.seq, exc)))

        def ended(sub_id: Hashable) -> None:
            """A member given more outputs than its limit is suspended: out of the set."""
            self.remove(sub_id)

        def given(
            members: list[_Held],
            passing: dict[_Held, list[Completed]],
            failed: dict[_Held, Exception],
            get: Callable[[Completed], Data],
        ) -> Iterator[tuple[Hashable, Subscription, Iterable[Data]]]:
            """What ``deliver_all`` numbers for the ``members`` (in order) of a shared
            automaton whose instances are within every member's ``state_limit``: those
            its ``WHERE``s pass (``passing``), read through ``get``; a member whose
            ``WHERE`` raised (``failed``) fails in its place."""
            for member in members:
                if failed and member in failed:
                    fail(member, failed[member])
                else:
                    counts.evaluated += 1
                    yield member.sub_id, member.sub, map(get, passing[member])

        def run(shared: _Shared, passed: dict[int, set[int]]) -> None:
            """Advance the shared automaton, then give each member whose ``WHERE`` passes
            one of the instances completed its outputs (``deliver_all``), and one whose
            instances now exceed its ``state_limit`` its outputs and its suspension
            (``deliver``); any other member, pushed alone, would output nothing and
            change nothing (it is live, and its instances are the shared ones its window
            keeps). Each instance's ``data`` is built once: the members' ``SELECT`` is the
            shared automaton's."""
            automaton = shared.automaton
            counts.evaluated += 1
            before = automaton.touched
            try:
                completed = automaton.advance(e, passed.get(0, _NONE).__contains__)
            except Exception as exc:  # each member would have raised alone
                for member in list(shared.members):
                    self.remove(member.sub_id)
                    out.append((member.sub_id, Failed(e.seq, exc)))
                return
            counts.instances += automaton.touched - before
            if charge is not None:
                share_out(shared.members, 1 + automaton.touched - before)
            live = automaton.live
            if not completed and live <= shared.limit:  # no member is given anything
                if shared.members:
                    self._reconcile(shared.runner)
                return
            if completed:
                completed.sort(key=_seqs)  # so each member's share is in its output order
                passing, failed = shared.where.passing(completed)
                if not shared.uniform:
                    shared.narrow(passing, failed, completed, e.time)
            else:
                passing, failed = {}, {}
            if live > shared.limit:
                members = list(shared.members)
            else:
                members = sorted((*passing, *failed), key=_rank)
            get = _Datas(automaton).__getitem__
            if live <= shared.limit:  # none past its state_limit: no need to read each one's
                deliver_all(e.seq, given(members, passing, failed, get), out, failing, ended)
            else:
                for member in members:
                    if member in failed:
                        fail(member, failed[member])
                        continue
                    mine = passing.get(member, [])
                    limit = member.sub.state_limit
                    kept = live if live <= limit else shared.held_by(member)
                    if kept > limit:
                        deliver(member, mine, get, kept)
                    elif mine:
                        deliver(member, mine, get)
            if shared.members:
                self._reconcile(shared.runner)

        def completed_by(
            done: dict[GroupMember, list[Completed]],
        ) -> Iterator[tuple[Hashable, Subscription, Iterable[Data]]]:
            """What ``deliver_all`` numbers for the members a group completed instances
            for (``done``), in rank order: those their ``WHERE``s pass, each instance's
            ``data`` built once per ``SELECT``; a member whose ``WHERE`` raises fails in its
            place."""
            views: dict[int, _Datas] = {}
            for member in sorted(done, key=_member_rank):
                if member.gone:
                    continue  # out of the set since the group completed it (it failed)
                held, mine = member.payload, done[member]
                if member.where:
                    try:
                        mine = member.automaton.passing(mine)
                    except Exception as exc:  # alone, its WHERE fails it here
                        fail(held, exc)
                        continue
                if mine:
                    if len(mine) > 1:
                        mine = sorted(mine, key=_seqs)
                    data = views.get(member.view)
                    if data is None:
                        data = views[member.view] = _Datas(member.automaton)
                    counts.evaluated += 1
                    yield held.sub_id, held.sub, map(data.__getitem__, mine)

        def follow(grouped: _Grouped, passed: dict[int, set[int]]) -> None:
            """Advance the threshold or bound group, then give each member it completed an
            instance of that passes the member's ``WHERE`` its outputs (``deliver_all``);
            any other member, pushed alone, would output nothing. The group holds no
            member more instances than its ``state_limit`` (``RecordGroup.advance``
            refuses such a start), so none is suspended but for its outputs per event
            (``deliver_all``). Where the group cannot follow the event, its members go on
            alone and are pushed it in full."""
            group = grouped.group
            nodes = passed.get(0, _NONE)
            counts.evaluated += 1
            before = group.touched
            done = group.advance(e, offer=1 in nodes, start=0 in nodes)
            if done is None:
                for held in self._dissolve(grouped):
                    evaluate(held)
                    if held.sub_id in self._held:
                        self._reconcile(held)
                return
            counts.instances += group.touched - before
            if charge is not None:
                share_out([m.payload for m in group.members], 1 + group.touched - before)
            # none can pass its state_limit (above)
            deliver_all(e.seq, completed_by(done), out, failing, ended)
            if group.members:
                self._reconcile(grouped.runner)

        for held in list(self._every.values()):
            if sees(held.sub_id):
                evaluate(held)
                if (
                    held.sub.live
                    and isinstance(held.sub.query, WatchQuery)
                    and self._every.pop(held.sub_id, None) is not None  # still held
                ):
                    watched = _watched_subject(held)
                    self._watching.setdefault(watched, {})[held.sub_id] = held
                    if watched:  # its offers are its subject's from now on
                        held.sub.engine.whole = False  # type: ignore[union-attr]  # a watch
        if self._watching and e.values.get("type") in CHANGING:
            watchers = list(self._watching.get("", {}).values())
            subject = e.values.get("subject")
            if type(subject) is str and subject in self._watching:
                watchers.extend(self._watching[subject].values())
                watchers.sort(key=_rank)
            for held in watchers:
                if sees(held.sub_id):
                    evaluate(held)
        fresh, self._fresh = self._fresh, {}
        for sub_id, held in list(fresh.items()):
            if sees(sub_id):
                evaluate(held)  # in full; indexed once the event is done
            else:
                self._fresh[sub_id] = fresh.pop(sub_id)  # its first live event is later
        unseen = []
        while self._ends and self._ends[0][0] <= e.time:
            entry = heapq.heappop(self._ends)
            ending = entry[2]
            if self._held.get(ending.sub_id) is not ending:
                continue
            if sees(ending.sub_id):
                evaluate(ending)  # the event at or after its end completes it
            else:
                unseen.append(entry)  # completed by the next event it sees
        for entry in unseen:
            heapq.heappush(self._ends, entry)
        found, counts.nodes = self.index.candidates(e.values)
        atomic: list[_Held] = []
        routes: dict[Hashable, tuple[_Held, dict[int, set[int]]]] = {}
        residual = self.index.residual
        for source_id in found:
            source = self._sources[source_id]  # type: ignore[index]  # the index holds this set's int source ids
            held = source.held
            if held.kind in _RUNNERS:
                if visible is not None:
                    continue  # not of a public type: it passes none of the members' sources
            elif not sees(held.sub_id):
                continue
            if held.kind == "atomic":
                check = residual(source_id)
                if check is None or check(e.values):
                    counts.sources += 1
                    atomic.append(held)
                continue
            if source.check is not None and not source.check.passes(source.node, e):
                continue
            counts.sources += 1
            route = routes.get(held.sub_id)
            if route is None:
                route = routes[held.sub_id] = (held, {})
            route[1].setdefault(source.side, set()).add(source.node)
        atomic.sort(key=_rank)
        for held in atomic:
            evaluate(held, True)
        for held, passed in sorted(routes.values(), key=lambda r: r[0].rank):
            if held.shared is not None:
                run(held.shared, passed)
                continue
            if held.kind == "group":
                assert held.grouped is not None
                follow(held.grouped, passed)
                continue
            engine = held.sub.engine
            assert isinstance(engine, PatternEngine)
            engine.route(passed)
            evaluate(held)
            if held.sub_id in self._held:
                self._reconcile(held)
        for held in fresh.values():
            if self._held.get(held.sub_id) is held:
                self._install(held)
        self.last = counts
        for f in fields(Counts):
            setattr(self.total, f.name, getattr(self.total, f.name) + getattr(counts, f.name))
        return out

    @property
    def instances(self) -> int:
        """Pattern instances held (waiting at a step) across the set."""
        return sum(_held_instances(held) for held in self._held.values() if held.kind == "pattern")


_RUNNERS = frozenset({"shared", "group"})  # the kinds of a held runner, of no subscription


def public_only(query: Any, public: frozenset[str]) -> bool:
    """Whether ``query`` is a pattern every source of which (the first and each step's, on
    every side) has a top-level conjunct ``type = 't'`` with ``t`` one of the ``public``
    types: an event of any other type passes none of them, so it starts no instance and
    takes the filter edge at every step (a ``NEXT``'s and a ``FOLD``'s alike), and
    skipping it only defers ``WITHIN``'s expiry, as for any event a pattern's sources do
    not pass (the module docstring). Such patterns see the same events whoever owns them,
    and may share automata and groups."""
    if not isinstance(query, PatternQuery):
        return False
    return all(
        _typed(source.filter, public)
        for side in query.sides
        for source in (side.first, *(step.source for step in side.steps))
    )


def _typed(condition: Cond | None, public: frozenset[str]) -> bool:
    """Whether ``condition`` (a source's filter) has a top-level ``type = 't'``, ``t`` in
    ``public``."""
    if condition is None:
        return False
    parts = condition.parts if isinstance(condition, All) else (condition,)
    for part in parts:
        if isinstance(part, Compare) and part.op == "=":
            for ref, literal in ((part.left, part.right), (part.right, part.left)):
                if (
                    isinstance(ref, Ref)
                    and ref.alias is None
                    and ref.attribute == "type"
                    and isinstance(literal, Literal)
                    and literal.value in public
                ):
                    return True
    return False


def _sole_key(node: Node, source: _Source) -> tuple[str, Any] | None:
    """``(attribute, value)`` when every instance waiting at ``node`` is hashed under the
    one ``value`` of ``attribute``, a value of the attribute's type the index can test and
    an attribute the source's split does not test already (nor ``subject``, whose tests
    are patterns; asked once per source); otherwise ``None``."""
    if node.key is None or len(node.waiting) != 1:
        return None
    attribute = node.key[0]
    if source.keyable is None:
        tests = source.split.tests
        source.keyable = attribute != "subject" and all(a != attribute for a, _ in tests)
    if not source.keyable:
        return None
    value = next(iter(node.waiting))
    if EVENT_SCHEMA.get(attribute) not in _KEY_TYPES.get(type(value), ()):
        return None  # among others, the key of instances whose value is NULL
    return attribute, value


class _RunnerId:
    """The id under which a shared automaton's sources route events: no subscription's."""


def _share_key(engine: PatternEngine) -> Pattern | None:
    """The pattern without its ``WHERE`` and ``WITHIN``, under which patterns share one
    automaton: one side, and no instance held yet (the shared automaton's are not its
    own)."""
    if len(engine.sides) != 1 or engine.kept_events:
        return None
    return replace(engine.sides[0].pattern, where=None, within=None)


def _own_state(held: _Held) -> None:
    """Give the pattern of ``held`` a copy of its shared automaton's instances."""
    assert held.shared is not None
    engine = held.sub.engine
    assert isinstance(engine, PatternEngine)
    engine.sides[0].take_state(held.shared.automaton)


def _restart(held: _Held) -> None:
    """Give the pattern of ``held`` the instances it holds in its group."""
    assert held.grouped is not None and held.member is not None
    held.member.automaton.restart(held.grouped.group.waiting_on(held.member))


def _held_instances(held: _Held) -> int:
    if held.shared is not None:
        return held.shared.held_by(held)
    if held.grouped is not None and held.member is not None:
        return held.grouped.group.live(held.member)
    return held.sub.engine.kept_events


def _watched_subject(held: _Held) -> str:
    """The one subject a range watch's events come from ("" for a watch of one offer, or
    one whose subject test is a pattern: any subject)."""
    query = held.sub.query
    if not isinstance(query, WatchQuery) or query.func is None:
        return ""
    for test in query.tests:
        if isinstance(test, SubjectTest) and not test.negated and test.compiled.is_literal:
            return test.compiled.text
    return ""


def _everyone(sub_id: Hashable) -> bool:
    return True


def _touched(held: _Held) -> int:
    engine = held.sub.engine
    return engine.touched if isinstance(engine, PatternEngine) else 0


# a held subscription's rank (the order it is evaluated in), read in C when sorting
_rank: Callable[[_Held], int] = attrgetter("rank")
_member_rank: Callable[[GroupMember], int] = attrgetter("payload.rank")  # of a group's member


def _seqs(completed: Completed) -> tuple[int, ...]:
    return completed[0]


class _Datas(dict[Completed, Data]):
    """The ``data`` of instances completed on one event, by instance: built once each by
    ``automaton`` for every pattern whose ``SELECT`` is its own, when first asked for, so
    that ``map(datas.__getitem__, mine)`` finds the rest without a Python call (about a
    hundred outputs per event at 100,000 patterns). One whose building raises is not
    kept: it raises again for each asker, as each would meet the error alone."""

    __slots__ = ("automaton",)

    def __init__(self, automaton: Automaton) -> None:
        super().__init__()
        self.automaton = automaton

    def __missing__(self, completed: Completed) -> Data:
        data = self[completed] = self.automaton.data(completed[1])
        return data


@dataclass(eq=False)
class Member:
    """One subscription in ``advance_members``: its evaluator, where it stands in the log
    (``cursor``: the last ``seq`` it was fed; ``seam``: the last ``seq`` of its history)
    and what it may see (SPEC 5.6: the public events, those owned by ``viewer``, and every
    event with ``sees_all``). The pass fills ``outputs`` (in order) and ``failed``."""

    sub_id: Hashable
    sub: Subscription
    cursor: int
    seam: int
    viewer: Hashable | None
    sees_all: bool = False
    outputs: list[Output] = field(default_factory=list)
    failed: Failed | None = None

    def sees(self, owner: Hashable | None) -> bool:
        return owner is None or self.sees_all or owner == self.viewer

    @property
    def joins_after(self) -> int:
        """The ``seq`` after which its events are live and new to it."""
        return max(self.cursor, self.seam)


def advance_members(
    members: Sequence[Member],
    events: Iterable[tuple[Hashable | None, Event | Mapping[str, Any]]],
    *,
    upto: int,
    order: Sequence[str] = ("type",),
) -> Counts:
    """Feed ``members`` the log's events ``(owner, event)`` in ``seq`` order, every event
    after the smallest cursor up to ``upto`` (the stretch read), each event read once.

    Each member gets exactly what feeding it alone would give (the advance of one
    subscription, ``services/subscriptions.py``): the events it may see with ``cursor <
    seq``, those up to its ``seam`` as history (pushed to it directly), then
    ``history_done`` at the first event past the seam, or at the end when ``upto`` reaches
    the seam; the live ones through one ``SubscriptionSet``, so each event walks the
    matching index once for all of them. A member stops at its ``End``, its
    ``state_limit`` or its ``Failed``. Returns the set's counts."""
    # Not shared: the members' evaluators are kept after the pass, and each would need a
    # copy of its shared automaton's instances; visibility may differ between them too.
    subs = SubscriptionSet(order, share=False)
    by_id = {m.sub_id: m for m in members}
    waiting = sorted(members, key=lambda m: (m.joins_after, str(m.sub_id)))
    history = [m for m in members if m.cursor < m.seam]
    joined = 0
    seq = None
    owner: Hashable | None = None

    def visible(sub_id: Hashable) -> bool:
        return by_id[sub_id].sees(owner)

    def done(m: Member) -> bool:
        return m.failed is not None or m.sub.finished

    def guarded(m: Member, step: Callable[[], list[Output]], at: int | None) -> None:
        try:
            m.outputs.extend(step())
        except Exception as exc:  # the others go on (module docstring)
            m.failed = Failed(at if at is not None else m.cursor, exc)

    for owner, raw in events:
        e = raw if isinstance(raw, Event) else event_from_dict(raw)
        seq = e.seq
        for m in history:
            if m.cursor < seq <= m.seam and not done(m) and m.sees(owner):
                guarded(m, partial(m.sub.push, e, live=False), seq)
        while joined < len(waiting) and waiting[joined].joins_after < seq:
            m = waiting[joined]
            joined += 1
            if done(m):
                continue
            if not m.sub.live:
                guarded(m, m.sub.history_done, seq)
            if not done(m):
                subs.add(m.sub_id, m.sub)
        for sub_id, output in subs.push(e, visible if owner is not None else None):
            if isinstance(output, Failed):
                by_id[sub_id].failed = output
            else:
                by_id[sub_id].outputs.append(output)
    for m in waiting[joined:]:
        if not done(m) and upto >= m.seam and not m.sub.live:
            guarded(m, m.sub.history_done, seq)
    return subs.total
