"""The producer and the consumers of range watches' answers, and the three strategies.

The ``Producer`` sees every event, keeps the open offers and the family of every watch it
holds (``OfferBook``) and knows which consumer holds which watch. Per change it builds one
message per consumer that needs one, by one strategy:

* ``enumerate``: the producer runs ``WatchSet.affected`` over all watches and sends each
  consumer that holds an affected watch the list of those watches with their new answers;
* ``relax``: every consumer holding a watch of a changed family gets the family's raw
  change (the offer's new entry, or none), preceded by the changes it missed while other
  strategies ran; it keeps a replica of the family, derives the delta itself and runs
  ``affected`` over its own watches;
* ``reformulate``: those consumers get the delta itself (ProSem's message, with a loss's
  staircases) and run ``affected`` with no state but their watches.

A ``Consumer`` holds its watches, the answer last notified to each and, for relax, its
replicas of their families (each dropped with the consumer's last watch of it, as the
producer drops its place in that family's changes). It notifies a watch when
``watches.changed`` says so, exactly as the one evaluator does, whatever strategy brought
the answer: the strategies differ in who finds the affected watches and what crosses the
wire, never in the notifications.

Messages are plain lists and dicts of str, int and None (what msgpack, and so
channels-redis, carries): decimals travel as strings and are read back as decimals.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Hashable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import msgpack

from matching.index.intervals import Span
from matching.subscriptions import parse_query
from matching.subscriptions.events import Event
from matching.subscriptions.language.model import Threshold, WatchQuery
from matching.subscriptions.watches.watch import Answer, answer_data, changed

from .offers import Delta, Entry, Family, FamilyName, Gain, Loss, OfferBook
from .optimizer import Optimizer, Plan
from .watchset import WatchSet

STRATEGIES = ("enumerate", "relax", "reformulate")


@dataclass(frozen=True)
class Notification:
    watch: Hashable
    seq: int | None
    data: dict[str, Any]


# -- the wire format ------------------------------------------------------------------------


def _num(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


def _dec(value: Any) -> Any:
    return Decimal(value) if isinstance(value, str) else value


def encode_answer(a: Answer | None) -> list[Any] | None:
    return None if a is None else [a.offer, _num(a.value), a.shown]


def decode_answer(raw: list[Any] | None) -> Answer | None:
    return None if raw is None else Answer(raw[0], _dec(raw[1]), raw[2])


def encode_entry(e: Entry | None) -> list[Any] | None:
    return None if e is None else [_num(e.key), *encode_answer(e.answer)]  # type: ignore[misc]  # an entry always has its answer


def decode_entry(raw: list[Any] | None, func: str) -> Entry | None:
    if raw is None:
        return None
    answer = decode_answer(raw[1:])
    assert answer is not None
    value = answer.value
    return Entry(_dec(raw[0]), (value if func == "MIN" else -value, answer.offer), answer)


def encode_delta(d: Delta) -> list[Any]:
    loss = gain = None
    if d.loss is not None:
        l_ = d.loss
        loss = [_num(l_.at), _num(l_.lo), _num(l_.hi),
                [encode_entry(e) for e in l_.left], [encode_entry(e) for e in l_.right]]  # fmt: skip
    if d.gain is not None:
        gain = [encode_entry(d.gain.entry), _num(d.gain.lo), _num(d.gain.hi)]
    return [str(d.family), d.offer, loss, gain]


def decode_delta(raw: list[Any]) -> Delta:
    name = FamilyName.parse(raw[0])
    loss = gain = None
    if raw[2] is not None:
        at, lo, hi, left, right = raw[2]
        loss = Loss(_dec(at), _dec(lo), _dec(hi),
                    tuple(decode_entry(e, name.func) for e in left),  # type: ignore[misc]  # a loss's entries are never None
                    tuple(decode_entry(e, name.func) for e in right))  # type: ignore[misc]  # as above  # fmt: skip
    if raw[3] is not None:
        entry = decode_entry(raw[3][0], name.func)
        assert entry is not None
        gain = Gain(entry, _dec(raw[3][1]), _dec(raw[3][2]))
    return Delta(name, raw[1], loss, gain)


def size(message: Any) -> int:
    """Bytes on the wire (msgpack, channels-redis' encoding)."""
    return len(msgpack.packb(message))


# -- the producer ---------------------------------------------------------------------------


class Producer:
    """``strategy`` is one of ``STRATEGIES`` or ``"auto"`` (the optimizer's choice per change)."""

    def __init__(self, strategy: str = "auto", optimizer: Optimizer | None = None) -> None:
        if strategy not in (*STRATEGIES, "auto"):
            raise ValueError(
                f"strategy must be one of {', '.join(STRATEGIES)} or auto, not {strategy!r}"
            )
        self.strategy = strategy
        self.optimizer = optimizer or Optimizer()
        self.book = OfferBook()
        self.watches = WatchSet()
        self.home: dict[Hashable, int] = {}
        self.holders: dict[FamilyName, Counter[int]] = defaultdict(Counter)
        self.cursor: dict[tuple[int, FamilyName], int] = {}  # relax replicas' place in a log
        self.last_choice: str | None = None

    def register(self, watch: Hashable, query: str | WatchQuery, consumer: int) -> dict[str, Any]:
        """Adds a range watch held by ``consumer``; the message that tells it so: the
        watch's family, key range and threshold (the consumer parses nothing) and its
        answer now, its first notification. Messages of several registrations for one
        consumer may be sent as one by joining their ``register`` lists."""
        q = parse_query(query) if isinstance(query, str) else query
        if not isinstance(q, WatchQuery):
            raise ValueError("only form 4 watches are disseminated")
        if watch in self.watches:
            # taken again, its old family's count of holders would keep it for good
            raise ValueError(f"watch {watch!r} is registered already")
        name, span = self.watches.add(watch, q)
        self.home[watch] = consumer
        self.holders[name][consumer] += 1
        answer = self.book.family(name).best_in(span)
        threshold = None if q.threshold is None else [str(q.threshold.amount), q.threshold.percent]
        spanned = [_num(span.lo), span.lo_closed, _num(span.hi), span.hi_closed]
        return {"register": [[watch, str(name), spanned, threshold, encode_answer(answer)]]}

    def unregister(self, watch: Hashable) -> int:
        """Drops a watch (``KeyError`` for one it does not hold); the consumer that held it,
        which must be told with ``{"unregister": [watch, ...]}``. With the consumer's last
        watch of the family goes its place in the family's changes (the consumer drops its
        replica then, ``Consumer.handle``, and a next one starts from nothing on both
        sides); with the family's last watch, the family (``OfferBook.drop``): kept for
        watches that may never come, families of removed watches grew the process without
        bound and made every event loop over their patterns."""
        name = self.watches.family[watch]
        self.watches.remove(watch)
        consumer = self.home.pop(watch)
        held = self.holders[name]
        held[consumer] -= 1
        if not held[consumer]:
            del held[consumer]
            self.cursor.pop((consumer, name), None)
        if not held:
            del self.holders[name]
            self.book.drop(name)
        return consumer

    def change(self, e: Event) -> list[tuple[int, dict[str, Any]]]:
        """The messages for one event, ``(consumer, message)`` in consumer order."""
        deltas = [d for d in self.book.apply(e) if self.watches.size(d.family)]
        self.last_choice = None
        if not deltas:
            return []
        strategy = self.strategy
        if strategy == "auto":
            strategy = self.optimizer.choose(e.seq, self.plan(deltas))
        self.last_choice = strategy
        if strategy == "enumerate":
            return self._enumerate(e.seq, deltas)
        if strategy == "relax":
            return self._relax(e.seq, deltas)
        return self._reformulate(e.seq, deltas)

    def plan(self, deltas: list[Delta]) -> Plan:
        """What the optimizer needs to price the three strategies for these deltas."""
        affected: dict[int, float] = defaultdict(float)
        lookups: Counter[int] = Counter()
        delta_bytes: Counter[int] = Counter()
        relax_entries: Counter[int] = Counter()
        answer_bytes = entry_bytes = 0
        for d in deltas:
            total = self.watches.size(d.family)
            reach = self.watches.reach(d)
            encoded = size(encode_delta(d))
            current = d.gain.entry if d.gain is not None else None
            entry_bytes = max(entry_bytes, size(encode_entry(current)) + 8)
            answer_bytes = max(
                answer_bytes,
                size(encode_answer(current.answer if current is not None else None)) + 8,
            )
            log = len(self.book.families[d.family].log)
            for consumer, held in self.holders[d.family].items():
                if not held:
                    continue
                affected[consumer] += reach * held / total
                lookups[consumer] += 1
                delta_bytes[consumer] += encoded
                relax_entries[consumer] += log - self.cursor.get((consumer, d.family), 0)
        return Plan(dict(affected), dict(lookups), dict(delta_bytes), dict(relax_entries),
                    entry_bytes, answer_bytes)  # fmt: skip

    def _enumerate(self, seq: int, deltas: list[Delta]) -> list[tuple[int, dict[str, Any]]]:
        by_consumer: dict[int, list[Any]] = defaultdict(list)
        for d in deltas:
            for watch, answer in self.watches.affected(d).items():
                by_consumer[self.home[watch]].append([watch, encode_answer(answer)])
        return [(c, {"seq": seq, "answers": by_consumer[c]}) for c in sorted(by_consumer)]

    def _relax(self, seq: int, deltas: list[Delta]) -> list[tuple[int, dict[str, Any]]]:
        parts: dict[int, list[Any]] = defaultdict(list)
        for d in deltas:
            family = self.book.families[d.family]
            for consumer, held in self.holders[d.family].items():
                if held:
                    parts[consumer].append(self._catch_up(consumer, family))
        return [(c, {"seq": seq, "relax": parts[c]}) for c in sorted(parts)]

    def _catch_up(self, consumer: int, family: Family) -> list[Any]:
        start = self.cursor.get((consumer, family.name), 0)
        self.cursor[(consumer, family.name)] = len(family.log)
        changes = [[offer, encode_entry(entry)] for offer, entry in family.log[start:]]
        return [str(family.name), start, changes]

    def _reformulate(self, seq: int, deltas: list[Delta]) -> list[tuple[int, dict[str, Any]]]:
        parts: dict[int, list[Any]] = defaultdict(list)
        for d in deltas:
            encoded = encode_delta(d)
            for consumer, held in self.holders[d.family].items():
                if held:
                    parts[consumer].append(encoded)
        return [(c, {"seq": seq, "deltas": parts[c]}) for c in sorted(parts)]


# -- a consumer -----------------------------------------------------------------------------


class Consumer:
    """One process's watches. ``handle`` takes a message and returns the notifications in
    watch order; ``work`` counts what the last message cost, for the optimizer."""

    def __init__(self) -> None:
        self.watches = WatchSet()
        self.thresholds: dict[Hashable, Threshold | None] = {}
        self.last: dict[Hashable, Answer | None] = {}
        self.replicas: dict[FamilyName, Family] = {}
        self.work: defaultdict[str, float] = defaultdict(float)

    def handle(self, message: dict[str, Any]) -> list[Notification]:
        self.work = defaultdict(float)
        if "unregister" in message:
            for watch in message["unregister"]:
                name = self.watches.family[watch]
                self.watches.remove(watch)
                del self.thresholds[watch], self.last[watch]
                if not self.watches.size(name):  # the producer forgets its cursor alike
                    self.replicas.pop(name, None)
            return []
        if "register" in message:
            out = []
            for watch, name, (lo, lo_closed, hi, hi_closed), threshold, answer in message[
                "register"
            ]:
                span = Span(_dec(lo), lo_closed, _dec(hi), hi_closed)
                self.watches.add_span(watch, FamilyName.parse(name), span)
                self.thresholds[watch] = (
                    None if threshold is None else Threshold(Decimal(threshold[0]), threshold[1])
                )
                self.last[watch] = decode_answer(answer)
                out.append(Notification(watch, None, answer_data(self.last[watch])))
            return out
        seq = message["seq"]
        found: dict[Hashable, Answer | None] = {}
        started = time.perf_counter()
        if "answers" in message:
            found = {watch: decode_answer(answer) for watch, answer in message["answers"]}
        elif "deltas" in message:
            for raw in message["deltas"]:
                found.update(self._affected(decode_delta(raw)))
        else:
            for name, start, changes in message["relax"]:
                found.update(self._relax(FamilyName.parse(name), start, changes))
        self.work["seconds"] = time.perf_counter() - started
        self.work["watches"] = len(found)
        return self._notify(seq, found)

    def _affected(self, delta: Delta) -> dict[Hashable, Answer | None]:
        self.work["lookups"] += 1
        return self.watches.affected(delta)

    def _relax(
        self, name: FamilyName, start: int, changes: list[Any]
    ) -> dict[Hashable, Answer | None]:
        family = self.replicas.setdefault(name, Family(name))
        if start != len(family.log):
            raise ValueError(
                f"replica of {name} is at change {len(family.log)}, message starts at {start}"
            )
        delta = None
        for offer, raw in changes:
            delta = family.put(offer, decode_entry(raw, name.func))
        self.work["entries"] += len(changes)
        return {} if delta is None else self._affected(delta)

    def _notify(self, seq: int, found: dict[Hashable, Answer | None]) -> list[Notification]:
        out = []
        for watch in sorted(found, key=str):
            new = found[watch]
            if changed(self.last[watch], new, self.thresholds[watch]):
                self.last[watch] = new
                out.append(Notification(watch, seq, answer_data(new)))
        return out
