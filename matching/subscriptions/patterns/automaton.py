"""Form 3 patterns compiled to automata (seed 003, Cayuga) and run over live events.

Compilation is mechanical. A pattern with sources ``a, b1 .. bk`` becomes the nodes
``1 .. k`` (node ``i`` waits for the event bound to ``bi``) plus the final node; the first
source is the start edge that creates an *instance* at node 1 for every event passing its
filter. Each waiting node has three kinds of edge, each a predicate over the instance and
the incoming event ``e`` (``F`` is the node's source filter, ``c`` its condition, ``f`` a
FOLD's iteration condition):

* ``NEXT``: forward ``F and c`` (bind ``e``, move to the next node); filter edge
  ``not (F and c)`` (stay, ``e`` skipped). An instance leaves on its first forward edge.
* ``FOLD``: rebind ``F and c and f`` (stay with ``e`` bound, the previous binding becomes
  ``.last``, aggregates updated) together with forward on the same predicate (a copy
  moves on, so at least one iteration is needed); filter edge ``not (F and c)``; when
  ``F and c`` holds and ``f`` does not, no edge is taken and the instance ends.

An instance reaching the final node is complete: it passes ``WHERE`` or is dropped. An
event is offered to the instances that were waiting before it arrived (so it binds at
most one alias of an instance), in node order, and then starts new instances.

Indexing: when a node's condition has a top-level conjunct ``b.x = E`` (``E`` not
depending on the incoming event), its instances are hashed by the value of ``E`` and an
event only touches the bucket of its own ``x``; skipping the others is exact because a
failing ``c`` takes the filter edge in both kinds of node. In the same way, when ``c``
has a top-level conjunct comparing the candidate's numeric attribute with an expression
fixed by earlier bindings (``b.price > 1.05 * a.price``, ``b.value < b.last.value``), the
instances of a bucket are also kept sorted by that expression's value, their *threshold*,
and an event is offered only those whose threshold its own value satisfies (an instance
whose threshold is NULL is offered nothing: the comparison fails whatever comes). A
FOLD's rebind condition ``f`` is never used so: when ``c`` holds and ``f`` fails the
instance ends, so it must be offered the event. ``touched`` counts the instances an
event was offered to, ``live`` the instances kept (``state_limit`` bound).

``WITHIN d`` drops an instance once an event arrives more than ``d`` after its first
event. Outputs caused by one event come ordered by the ``seq`` of their first event, then
the ``seq`` of all their bound events, then by side of ``UNION`` (left first).
"""

from __future__ import annotations

import copy
import datetime as dt
import heapq
import itertools
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any

from sortedcontainers import SortedList

from matching import Type
from matching.subscriptions.events import Event
from matching.subscriptions.language.schema import EVENT_SCHEMA
from matching.subscriptions.run.limits import Meter
from matching.subscriptions.run.predicates import COMPARE

from .model import (
    AggregateRef,
    All,
    Any_,
    Arithmetic,
    Bound,
    Compare,
    Cond,
    Dur,
    Duration,
    Expr,
    FoldAggregate,
    Literal,
    Matches,
    Pattern,
    PatternQuery,
    Ref,
    Step,
)
from .parser import item_key

# Exact decimal arithmetic for any value an event can carry (SPEC 8.3: '/' is not integer
# division); a quotient that does not terminate is kept to 50 digits.
_CTX = Context(prec=50)
# The operators of ``+ - *`` (``/`` guards a zero divisor itself): the one place their
# rounding is chosen, read by ``patterns/thresholds.py`` too, whose thresholds must be the
# values these closures compute.
ARITHMETIC: Mapping[str, Callable[[Any, Any], Any]] = {
    "+": _CTX.add,
    "-": _CTX.subtract,
    "*": _CTX.multiply,
}
_AVG_PLACES = Decimal("1E-8")
_MISSING = object()
_NUMBER = (Type.INT, Type.DECIMAL)
_ABOVE_ALL = float("inf")  # after every instance id in a (threshold, id) pair

Value = Any
Getter = Callable[["Instance", Event | None], Value]
Test = Callable[["Instance", Event | None], bool]


class Instance:
    """One partial match: ``bound[i]`` the event bound to alias ``i`` (a FOLD's latest
    iteration), ``last[i]`` a FOLD alias's previous binding, ``aggregates`` the values of
    finished FOLDs, ``running`` the state of the current FOLD's aggregates."""

    __slots__ = (
        "node", "bound", "last", "aggregates", "running", "key", "threshold", "id", "alive"
    )  # fmt: skip

    def __init__(
        self,
        node: int,
        bound: tuple[Event, ...],
        last: tuple[Event | None, ...],
        aggregates: dict[str, Value],
        running: tuple[Any, ...],
        ident: int,
    ) -> None:
        self.node = node
        self.bound = bound
        self.last = last
        self.aggregates = aggregates
        self.running = running
        self.key: Any = _MISSING
        self.threshold: Any = None
        self.id = ident
        self.alive = True

    @property
    def first(self) -> Event:
        return self.bound[0]


def _seconds(delta: dt.timedelta) -> Decimal:
    micros = delta // dt.timedelta(microseconds=1)
    whole, rest = divmod(micros, 1_000_000)
    return Decimal(whole) if rest == 0 else _CTX.divide(Decimal(micros), Decimal(1_000_000))


class _Compiler:
    """Turns expressions into closures over ``(instance, candidate)`` for one context:
    ``current`` is the index of the alias the candidate would bind (``None`` in ``WHERE``
    and ``SELECT``; ``-1`` in a static FILTER, where bare names are the candidate's)."""

    def __init__(self, aliases: tuple[str, ...], current: int | None) -> None:
        self.index = {a: i for i, a in enumerate(aliases)}
        self.current = current

    def expr(self, e: Expr) -> Getter:
        if isinstance(e, Literal):
            v: Value = e.value
            return lambda inst, cand: v
        if isinstance(e, Duration):
            d = Decimal(e.seconds)
            return lambda inst, cand: d
        if isinstance(e, Ref):
            return self.ref(e)
        if isinstance(e, AggregateRef):
            name = e.name
            return lambda inst, cand: inst.aggregates.get(name)
        if isinstance(e, Dur):
            if self.current is None:
                return lambda inst, cand: _seconds(inst.bound[-1].time - inst.bound[0].time)
            return lambda inst, cand: _seconds(cand.time - inst.bound[0].time)  # type: ignore[union-attr]  # current is set: a candidate is tried
        assert isinstance(e, Arithmetic)
        left, right = self.expr(e.left), self.expr(e.right)
        op = ARITHMETIC.get(e.op)
        if op is not None:
            apply = op

            def arithmetic(inst: Instance, cand: Event | None) -> Value:
                a, b = left(inst, cand), right(inst, cand)
                return None if a is None or b is None else apply(a, b)

            return arithmetic

        def divide(inst: Instance, cand: Event | None) -> Value:
            a, b = left(inst, cand), right(inst, cand)
            return None if a is None or b is None or b == 0 else _CTX.divide(a, b)

        return divide

    def ref(self, r: Ref) -> Getter:
        attr = r.attribute
        if r.alias is None:  # a FILTER's bare attribute: the candidate's own
            return lambda inst, cand: cand.values.get(attr)  # type: ignore[union-attr]  # as above
        i = self.index[r.alias]
        if r.last:
            if i == self.current:  # the instance's latest binding is the candidate's .last
                return lambda inst, cand: inst.bound[i].values.get(attr)
            return lambda inst, cand: _get(inst.last[i], attr)
        if i == self.current:
            return lambda inst, cand: cand.values.get(attr)  # type: ignore[union-attr]  # as above
        return lambda inst, cand: inst.bound[i].values.get(attr)

    def cond(self, c: Cond) -> Test:
        if isinstance(c, Compare):
            left, right, compare = self.expr(c.left), self.expr(c.right), COMPARE[c.op]

            def comparison(inst: Instance, cand: Event | None) -> bool:
                a = left(inst, cand)
                if a is None:
                    return False
                b = right(inst, cand)
                return b is not None and compare(a, b)

            return comparison
        if isinstance(c, Matches):
            subject, pattern, negated = self.ref(c.ref), c.compiled, c.negated

            def matches(inst: Instance, cand: Event | None) -> bool:
                s = subject(inst, cand)
                return s is not None and pattern.matches(s) != negated

            return matches
        parts = [self.cond(p) for p in c.parts]
        if len(parts) == 2:
            # The common case spelled out: a generator per evaluation costs more than the
            # comparisons themselves when many patterns run (multi.py's benchmark).
            first, second = parts
            if isinstance(c, All):
                return lambda inst, cand: first(inst, cand) and second(inst, cand)
            return lambda inst, cand: first(inst, cand) or second(inst, cand)
        if isinstance(c, All):
            return lambda inst, cand: all(p(inst, cand) for p in parts)
        assert isinstance(c, Any_)
        return lambda inst, cand: any(p(inst, cand) for p in parts)


def _get(event: Event | None, attr: str) -> Value:
    return None if event is None else event.values.get(attr)


def compile_cond(c: Cond, aliases: tuple[str, ...], current: int) -> Test:
    """``c`` as a node binding alias ``current`` evaluates it on ``(instance, candidate)``:
    for code that must reach the same answers as the automata (``patterns/thresholds.py``)."""
    return _Compiler(aliases, current).cond(c)


def compile_expr(e: Expr, aliases: tuple[str, ...], current: int | None) -> Getter:
    """``e`` as a node binding alias ``current`` evaluates it (see ``compile_cond``;
    ``None``: as ``WHERE`` does, on a complete instance)."""
    return _Compiler(aliases, current).expr(e)


@dataclass
class Node:
    """A waiting node: its source ``filter`` (static), its ``condition`` (``c``), a FOLD's
    ``rebind`` (``f``) and aggregates, and the hash ``key`` of its instances if any:
    (the candidate's attribute, the getter of the value it must equal); ``bound``, if any,
    is the threshold conjunct (the candidate's attribute, the comparison with the candidate
    on the left, the threshold's getter), and ``ranked`` holds per bucket the ``(threshold,
    id)`` of its instances whose threshold is a number, ``loose`` those whose threshold is
    some other value (offered every event of the bucket, as if there were no order)."""

    index: int  # the alias this node binds (1-based position among the pattern's aliases)
    kind: str  # "next" or "fold"
    filter: Test | None
    condition: Test
    rebind: Test | None
    aggregates: tuple[FoldAggregate, ...]
    key: tuple[str, Getter] | None
    bound: tuple[str, str, Getter] | None = None
    waiting: dict[Any, dict[int, Instance]] = field(default_factory=dict)
    ranked: dict[Any, SortedList] = field(default_factory=dict)
    loose: dict[Any, dict[int, Instance]] = field(default_factory=dict)

    def offered(self, key: Any, bucket: dict[int, Instance], e: Event) -> list[Instance]:
        """The instances of ``bucket`` (the one of ``key``) that ``e`` may advance: all of
        them, in the order they entered, when there is no threshold."""
        if self.bound is None:
            return list(bucket.values())
        attribute, op, _ = self.bound
        out = list(self.loose.get(key, {}).values())
        v = e.values.get(attribute)
        ranked = self.ranked.get(key)
        if v is not None and ranked:
            # op compares the candidate's value v with each threshold t: v op t
            if op == ">":
                pairs = ranked.islice(0, ranked.bisect_left((v,)))
            elif op == ">=":
                pairs = ranked.islice(0, ranked.bisect_right((v, _ABOVE_ALL)))
            elif op == "<":
                pairs = ranked.islice(ranked.bisect_right((v, _ABOVE_ALL)))
            else:
                pairs = ranked.islice(ranked.bisect_left((v,)))
            out.extend(bucket[i] for _, i in pairs)
        return out


class Automaton:
    """One side of a pattern, compiled; ``event`` offers it one live event. ``meter``, set
    for one event only (``PatternEngine.event``), is paid one unit per instance offered:
    a backtest's deadline is asked inside the event, however many instances it moves."""

    meter: Meter | None = None  # a class default: set on the instance for one event only

    def __init__(self, pattern: Pattern, side: int, ids: itertools.count[int]) -> None:
        self.pattern = pattern
        self.side = side
        self.ids = ids
        aliases = pattern.aliases
        static = _Compiler(aliases, -1)
        self.start = None if pattern.first.filter is None else static.cond(pattern.first.filter)
        self.nodes = [self._node(i, step, aliases) for i, step in enumerate(pattern.steps, 1)]
        final = _Compiler(aliases, None)
        self.where = None if pattern.where is None else final.cond(pattern.where)
        self.items = [(item_key(i), self._item(i.expr, final)) for i in pattern.select]
        self.within = None if pattern.within is None else dt.timedelta(seconds=pattern.within)
        self.expiry: list[tuple[dt.datetime, int, Instance]] = []
        self.live = 0
        self.touched = 0
        self.now: dt.datetime | None = None  # the time of the last event offered

    def _node(self, index: int, step: Step, aliases: tuple[str, ...]) -> Node:
        here = _Compiler(aliases, index)
        static = _Compiler(aliases, -1)
        return Node(
            index,
            step.kind,
            None if step.source.filter is None else static.cond(step.source.filter),
            here.cond(step.condition),
            None if step.rebind is None else here.cond(step.rebind),
            step.aggregates,
            _hash_key(step, aliases[index], here),
            _threshold(step, aliases[index], here),
        )

    def _item(
        self, expr: Ref | AggregateRef | Dur | Bound, final: _Compiler
    ) -> Callable[[Instance], Value]:
        if isinstance(expr, Bound):
            at = 0 if expr.which == "start" else -1
            return lambda inst: inst.bound[at].raw["time"]
        if isinstance(expr, Ref):
            if expr.last:
                i, attr = final.index[expr.alias or ""], expr.attribute
                return lambda inst: None if inst.last[i] is None else inst.last[i].raw.get(attr)  # type: ignore[union-attr]  # checked for None just before (an index: no narrowing)
            i, attr = final.index[expr.alias or ""], expr.attribute
            return lambda inst: inst.bound[i].raw.get(attr)
        getter = final.expr(expr)
        averages = {a.name for s in self.pattern.steps for a in s.aggregates if a.func == "AVG"}
        if isinstance(expr, AggregateRef) and expr.name in averages:
            # as form 1 shows an AVG: rounded half-even to 8 places (conditions use it exact)
            return lambda inst: _shown(_round(getter(inst, None)))
        return lambda inst: _shown(getter(inst, None))

    # -- running ----------------------------------------------------------------------------

    def event(self, e: Event) -> list[tuple[tuple[int, ...], Instance]]:
        """Offer ``e``; the instances it completed that pass ``WHERE``, with their sort key."""
        return self.advance(e, lambda source: self.passes(source, e))

    def passes(self, source: int, e: Event) -> bool:
        """Whether ``e`` passes the static filter of ``source`` (0 the first source, ``i``
        the source of node ``i``)."""
        test = self.start if source == 0 else self.nodes[source - 1].filter
        return test is None or test(_NO_INSTANCE, e)

    def advance(
        self, e: Event, passes: Callable[[int], bool]
    ) -> list[tuple[tuple[int, ...], Instance]]:
        """``event`` with the static filters answered by ``passes(source)`` (as ``passes``
        numbers them): a caller that has already tested them for many patterns at once
        (``multi.py``, through the matching index) hands the answers in."""
        self.now = e.time
        if self.within is not None:
            self._expire(e.time)
        moved: list[Instance] = []
        for node in self.nodes:
            if node.waiting and passes(node.index):
                self._offer(node, e, moved)
        if passes(0):
            moved.append(Instance(1, (e,), (None,), {}, (), next(self.ids)))
        out = []
        for inst in moved:
            if inst.node <= len(self.nodes):
                self._enter(inst, new=True)
            elif self.where is None or self.where(inst, None):
                out.append((tuple(x.seq for x in inst.bound), inst))
        return out

    def data(self, inst: Instance) -> dict[str, Value]:
        """``data`` of a completed instance: an attribute its event lacks is left out."""
        data = {}
        for key, getter in self.items:
            value = getter(inst)
            if value is not None:
                data[key] = value
        return data

    def passing(
        self, completed: list[tuple[tuple[int, ...], Instance]]
    ) -> list[tuple[tuple[int, ...], Instance]]:
        """The instances of ``completed`` (what an automaton of the same pattern without
        ``WHERE`` completed on one event) that pass this automaton's ``WHERE``, in order:
        what ``advance`` would have returned here, since ``WHERE`` is read only once an
        instance is complete and never changes how instances move."""
        where = self.where
        if where is None:
            return completed
        return [c for c in completed if where(c[1], None)]

    def take_state(self, other: Automaton) -> None:
        """Hold a copy of ``other``'s instances in place of this automaton's own: ``other``
        is compiled from this pattern without (or with another) ``WHERE`` and with the
        same ``WITHIN`` or a longer one (or none), so its nodes are these nodes; ``multi.py``
        gives a pattern that leaves a shared automaton the state it would have reached
        alone. Instances move independently of each other and ``WITHIN`` only drops them,
        so that state is ``other``'s less the instances this ``WITHIN`` had dropped at the
        last event ``other`` was offered."""
        held = [(n.waiting, n.ranked, n.loose) for n in other.nodes]
        # the sentinel of a key or threshold no value equals must stay that very object
        nodes, self.expiry = copy.deepcopy((held, other.expiry), {id(_MISSING): _MISSING})
        for node, (waiting, ranked, loose) in zip(self.nodes, nodes, strict=True):
            node.waiting, node.ranked, node.loose = waiting, ranked, loose
        self.live = other.live
        self.ids = itertools.count(next(other.ids))  # after every id copied
        self.now = other.now
        if self.within != other.within:
            self.expiry = []
            if self.within is not None:
                self.expiry = [(i.first.time, i.id, i) for i in self.instances()]
                heapq.heapify(self.expiry)
                if self.now is not None:
                    self._expire(self.now)

    def instances(self) -> Iterator[Instance]:
        """Every instance held, waiting at any node."""
        for node in self.nodes:
            for bucket in node.waiting.values():
                yield from bucket.values()

    def held_within(self, within: dt.timedelta | None) -> int:
        """How many instances an automaton of this pattern with ``within`` (as long as
        this one's, or shorter) would hold after the last event offered: those whose first
        event is no more than ``within`` before it."""
        if within == self.within or within is None or self.now is None:
            return self.live
        limit = self.now - within
        return sum(1 for i in self.instances() if i.first.time >= limit)

    def restart(self, firsts: Iterable[Event]) -> None:
        """Hold, in place of this automaton's instances, one started by each of ``firsts``
        (in order) and waiting at the first step: ``patterns/thresholds.py`` gives a
        pattern of one step leaving its group the instances it would hold alone so."""
        for node in self.nodes:
            node.waiting, node.ranked, node.loose = {}, {}, {}
        self.expiry = []
        self.live = 0
        for e in firsts:
            self._enter(Instance(1, (e,), (None,), {}, (), next(self.ids)), new=True)

    def _offer(self, node: Node, e: Event, moved: list[Instance]) -> None:
        value = None if node.key is None else e.values.get(node.key[0])
        if node.key is None:
            bucket = node.waiting.get(None)
        else:
            bucket = None if value is None else node.waiting.get(value)
        if not bucket:
            return
        meter = self.meter
        for inst in node.offered(value, bucket, e):
            self.touched += 1
            if meter is not None:
                meter.spend(1)
            if not node.condition(inst, e):
                continue  # the filter edge: e is skipped
            self._leave(inst)
            if node.kind == "next":
                moved.append(self._forward(inst, node, e))
                continue
            assert node.rebind is not None
            if not node.rebind(inst, e):
                continue  # c holds and f fails: no edge, the instance ends
            # the rebind edge (the instance stays, e bound) and the forward edge (a copy)
            inst.running = _iterate(node.aggregates, inst.running, e)
            inst.last = (*inst.last[:-1], inst.bound[-1])
            inst.bound = (*inst.bound[:-1], e)
            moved.append(self._forward(inst, node, e))
            self._enter(inst, new=False)

    def _forward(self, inst: Instance, node: Node, e: Event) -> Instance:
        """A new instance at the next node: ``e`` bound (a FOLD's copy has it already)."""
        if node.kind == "fold":
            aggregates = {**inst.aggregates, **_finish(node.aggregates, inst.running)}
            bound, last = inst.bound, inst.last
        else:
            aggregates = inst.aggregates
            bound, last = (*inst.bound, e), (*inst.last, None)
        return Instance(inst.node + 1, bound, last, aggregates, (), next(self.ids))

    def _enter(self, inst: Instance, *, new: bool) -> None:
        """``inst`` waits at its node, in the bucket of its hash key."""
        node = self.nodes[inst.node - 1]
        if node.kind == "fold" and len(inst.bound) == inst.node:
            # Arriving at a FOLD: until it iterates, its alias holds the event bound just
            # before, which is what the first candidate sees as .last.
            inst.bound = (*inst.bound, inst.bound[-1])
            inst.last = (*inst.last, None)
            inst.running = _start(node.aggregates)
        key: Any = None
        if node.key is not None:
            key = node.key[1](inst, None)
            if key is None:
                key = _MISSING  # equal to no event's value: it waits, never touched
        inst.key = key
        bucket = node.waiting.get(key)
        if bucket is None:
            bucket = node.waiting[key] = {}
        bucket[inst.id] = inst
        if node.bound is not None:
            threshold = _threshold_of(node.bound[2], inst)
            inst.threshold = threshold
            if isinstance(threshold, int | Decimal) and not isinstance(threshold, bool):
                ranked = node.ranked.get(key)
                if ranked is None:
                    ranked = node.ranked[key] = SortedList()
                ranked.add((threshold, inst.id))
            elif threshold is not None:
                node.loose.setdefault(key, {})[inst.id] = inst
        inst.alive = True
        self.live += 1
        if new and self.within is not None:
            heapq.heappush(self.expiry, (inst.first.time, inst.id, inst))

    def _leave(self, inst: Instance) -> None:
        node = self.nodes[inst.node - 1]
        bucket = node.waiting[inst.key]
        del bucket[inst.id]
        if not bucket:
            del node.waiting[inst.key]
        if node.bound is not None:
            threshold = inst.threshold
            if isinstance(threshold, int | Decimal) and not isinstance(threshold, bool):
                ranked = node.ranked[inst.key]
                ranked.remove((threshold, inst.id))
                if not ranked:
                    del node.ranked[inst.key]
            elif threshold is not None:
                loose = node.loose[inst.key]
                del loose[inst.id]
                if not loose:
                    del node.loose[inst.key]
        inst.alive = False
        self.live -= 1

    def _expire(self, now: dt.datetime) -> None:
        """Drop the instances whose first event is more than ``within`` before ``now``."""
        assert self.within is not None
        limit = now - self.within
        while self.expiry and self.expiry[0][0] < limit:
            _, _, inst = heapq.heappop(self.expiry)
            if inst.alive:
                self._leave(inst)


class _NoInstance:
    """What a static FILTER is evaluated with: it names no alias."""


_NO_INSTANCE: Any = _NoInstance()


def _hash_key(step: Step, alias: str, here: _Compiler) -> tuple[str, Getter] | None:
    """``(x, E)`` for the first top-level conjunct ``alias.x = E`` of the condition whose
    ``E`` does not read the incoming event (no ``alias.x``, no ``DUR``)."""
    parts = step.condition.parts if isinstance(step.condition, All) else (step.condition,)
    for part in parts:
        if not isinstance(part, Compare) or part.op != "=":
            continue
        for mine, other in ((part.left, part.right), (part.right, part.left)):
            if (
                isinstance(mine, Ref)
                and mine.alias == alias
                and not mine.last
                and not reads_candidate(other, alias)
            ):
                return mine.attribute, here.expr(other)
    return None


def _threshold(step: Step, alias: str, here: _Compiler) -> tuple[str, str, Getter] | None:
    """``(x, op, T)`` for a top-level conjunct of the condition that compares the
    candidate's numeric attribute ``alias.x`` by ``<``, ``<=``, ``>`` or ``>=`` with an
    expression ``T`` that does not read the incoming event, written ``alias.x op T``. One
    whose ``T`` is not a literal is preferred: a literal bound is the same for every
    instance, so it sorts nothing (``multi.py`` holds it in the matching index instead)."""
    parts = step.condition.parts if isinstance(step.condition, All) else (step.condition,)
    found = [
        reading
        for part in parts
        for reading in order_readings(part, alias)
        if not reads_candidate(reading[2], alias)
    ]
    if not found:
        return None
    attribute, op, other = next((f for f in found if not isinstance(f[2], Literal)), found[0])
    return attribute, op, here.expr(other)


# an order comparison read from its other side: ``x < y`` is ``y > x``
REVERSED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def order_readings(part: Cond, alias: str | None) -> list[tuple[str, str, Expr]]:
    """``(attribute, op, other)`` for each side of ``part`` that is the numeric attribute
    of ``alias`` (``None``: a static filter's bare attribute; otherwise the candidate's,
    not ``.last``) when ``part`` compares by an order: ``attribute op other``."""
    if not isinstance(part, Compare) or part.op not in REVERSED:
        return []
    out = []
    for mine, other, op in ((part.left, part.right, part.op),
                            (part.right, part.left, REVERSED[part.op])):  # fmt: skip
        if (
            isinstance(mine, Ref)
            and mine.alias == alias
            and not mine.last
            and EVENT_SCHEMA.get(mine.attribute) in _NUMBER
        ):
            out.append((mine.attribute, op, other))
    return out


def _threshold_of(getter: Getter, inst: Instance) -> Value:
    """The threshold of ``inst``; an arithmetic error makes it a value no order holds (the
    instance is then offered every event, and its condition meets the error as it would
    without the order)."""
    try:
        return getter(inst, None)
    except ArithmeticError:
        return _MISSING


def reads_candidate(e: Expr, alias: str) -> bool:
    """Whether ``e``'s value depends on the event a node binding ``alias`` is offered."""
    if isinstance(e, Ref):
        return e.alias == alias and not e.last
    if isinstance(e, Dur):
        return True
    if isinstance(e, Arithmetic):
        return reads_candidate(e.left, alias) or reads_candidate(e.right, alias)
    return False


# -- FOLD aggregates: state (count, then per aggregate (present, sum, min, max)) ----------


def _start(aggregates: tuple[FoldAggregate, ...]) -> tuple[Any, ...]:
    # A sum starts as the int 0 and stays an int while it adds ints (SPEC 8.3: a FOLD's
    # aggregates show values as form 1's do); a state pickled with Decimal(0) goes on too.
    return (0, *((0, 0, None, None) for _ in aggregates))


def _iterate(
    aggregates: tuple[FoldAggregate, ...], running: tuple[Any, ...], e: Event
) -> tuple[Any, ...]:
    out: list[Any] = [running[0] + 1]
    for agg, state in zip(aggregates, running[1:], strict=True):
        argument = agg.argument
        v = None if argument is None else e.values.get(argument.attribute)
        if argument is None or not isinstance(v, int | Decimal):  # absent (numbers only)
            out.append(state)
            continue
        if type(e.raw[argument.attribute]) is int:
            v = int(v)  # a quantity sent as an int counts as one (SPEC 8.1), as in form 1
        present, total, low, high = state
        out.append(
            (
                present + 1,
                total + v if type(total) is int and type(v) is int else _CTX.add(total, v),
                v if low is None or v < low else low,
                v if high is None or v > high else high,
            )
        )
    return tuple(out)


def _finish(aggregates: tuple[FoldAggregate, ...], running: tuple[Any, ...]) -> dict[str, Value]:
    """The aggregates' values; one over an attribute no iteration had is absent."""
    values: dict[str, Value] = {}
    for agg, (present, total, low, high) in zip(aggregates, running[1:], strict=True):
        if agg.func == "COUNT":
            values[agg.name] = running[0]
        elif present:
            values[agg.name] = {
                "SUM": total,
                "AVG": _CTX.divide(total, Decimal(present)),
                "MIN": low,
                "MAX": high,
            }[agg.func]
    return values


def _shown(value: Value) -> Value:
    """An aggregate or ``DUR`` as ``data`` shows it: ints stay ints (a ``SUM`` of ints, a
    ``MIN``/``MAX`` chosen among ints), decimals are strings (as they came, for ``MIN`` and
    ``MAX``: ``Decimal`` keeps a value's places)."""
    if value is None or isinstance(value, int):
        return value
    assert isinstance(value, Decimal)
    return format(value, "f")  # never an exponent (1E-8), as form 1 writes decimals


class PatternEngine:
    """Every side of a form 3 query; ``event`` gives the ``(seq, data)`` it completes."""

    # a class default: an engine pickled before ``give`` existed reads it too
    _given: list[tuple[tuple[int, ...], Instance]] | None = None

    def __init__(self, query: PatternQuery) -> None:
        ids = itertools.count()
        self.sides = [Automaton(p, i, ids) for i, p in enumerate(query.sides)]
        self._routed: Mapping[int, Container[int]] | None = None

    def route(self, passed: Mapping[int, Container[int]]) -> None:
        """For the next ``event`` only: the sources (numbered as ``Automaton.passes``
        numbers them) whose static filters it passes, per side; a side left out passes
        none. ``multi.py`` tests the filters of many patterns at once through the matching
        index and hands each pattern its answers here, since ``Subscription.push`` calls
        ``event`` itself; the outputs are those of ``event`` without the route."""
        self._routed = passed

    def give(self, completed: list[tuple[tuple[int, ...], Instance]], live: int) -> None:
        """For the next ``event`` only, on a pattern of one side: ``completed`` is what a
        shared automaton of this pattern without ``WHERE`` completed on it and this
        ``WHERE`` passes (``Automaton.passing``), ``live`` the instances it holds after it,
        which are this pattern's too (``multi.py`` runs one automaton for the patterns that
        differ only in ``WHERE``); ``event`` then gives their outputs."""
        self._given = completed
        self.sides[0].live = live

    kept_bytes = 0  # its instances bind events the log holds: counted by kept_events only

    @property
    def kept_events(self) -> int:
        """The live instances (SPEC 8.3's ``state_limit`` counts them)."""
        sides = self.sides  # one side without a UNION: asked after every event
        return sides[0].live if len(sides) == 1 else sum(a.live for a in sides)

    @property
    def touched(self) -> int:
        sides = self.sides
        return sides[0].touched if len(sides) == 1 else sum(a.touched for a in sides)

    def event(self, e: Event, meter: Meter | None = None) -> list[tuple[int, dict[str, Any]]]:
        """The ``(seq, data)`` that ``e`` completes, in order; with ``meter``, each instance
        offered is paid for (``Automaton.meter``), so that its interrupt is asked inside the
        event (its work limit is the caller's to choose: a pattern's work is bounded by its
        instances, ``limits.py``)."""
        if meter is None:
            return self._event(e)
        for automaton in self.sides:
            automaton.meter = meter
        try:
            return self._event(e)
        finally:
            for automaton in self.sides:
                del automaton.meter  # back to the class's None: nothing of it is pickled

    def _event(self, e: Event) -> list[tuple[int, dict[str, Any]]]:
        routed, self._routed = self._routed, None
        given, self._given = self._given, None
        found = []
        for automaton in self.sides:
            if given is not None:
                completed = given
            elif routed is None:
                completed = automaton.event(e)
            else:
                completed = automaton.advance(e, routed.get(automaton.side, ()).__contains__)
            for seqs, inst in completed:
                found.append((seqs[0], seqs, automaton.side, automaton.data(inst)))
        found.sort(key=lambda f: f[:3])
        return [(e.seq, data) for *_, data in found]


def _round(value: Decimal | None) -> Decimal | None:
    return None if value is None else value.quantize(_AVG_PLACES, rounding=ROUND_HALF_EVEN)
