"""Form 4 watches delivered by dissemination inside the subscription engine (SPEC 8.3,
issue 35 item 5): the ``WatchHub`` of one engine process.

The hub holds the process's live watches, range and single-offer, and the open offers ONCE
for all of them: the ``Producer``'s ``OfferBook``. Each event the engine reads is pushed
to it (``push``): the producer applies it to the book and, for a change that reaches a
range watch, the optimizer picks enumerate, relax or reformulate (``strategies.py``); the
messages go to ``CONSUMERS`` in-process ``Consumer``s, which find the affected watches and
notify as the one evaluator does (``watches.changed`` against the last notified answer,
with the watch's threshold). A single-offer watch is answered from the book's row of its
offer when the event names that offer. The notifications are numbered by each watch's
``Subscription`` (``deliver``), so the engine writes them as it writes any other.

Equivalence with the one evaluator (``WatchEngine``): a watch joins (``add``) live and
standing where the hub stands (the engine promotes it at its own cursor, and pushes the hub
every public event: offer and ``best_offer`` events are public, SPEC 5.6), with the answer
it was last notified. The first watch to join an empty hub gives it its open offers; the
others' are dropped (their ``WatchEngine`` keeps its answer and is marked ``shared``). From
then on the book is what each watch's own offers would be, and a consumer's notification
is exactly its ``WatchEngine.event`` output (``tests/dissemination/test_hosted.py``).

A watch taken out (``remove``: paused, or moved) gets its own copy of the offers again
(``detached``); ``subscription`` gives it as a checkpoint stores it, without offers, the
book being dumped once for all (``run/snapshot.py``, ``book_dump``). A family of range
watches goes with its last watch, and all that is kept for it (``Producer.unregister``:
its entries, its relax replicas), so that watches created and deleted at will leave
nothing behind; when the last watch leaves, the book is dropped too and the next watch
brings one again.

Catching up (``advance_watches``): the watches that are not live in a hub yet (replaying
the log from its start, or restored behind the engine) are fed together over ONE book, not
one each (issue 35: a thousand joiners, each with its own copy of 10,000 offers, took
gigabytes). The book is a function of the log's position (every public event applied), so
a watch takes it up where it stands; in its history it needs nothing else (its ranking is
built at its registration, ``WatchEngine.rank``), and once registered it follows each
change of the book (``WatchEngine.moved``). The book is a copy at each call and never
changed after it, so a watch holds it ``borrowed`` until it joins a hub (which copies it
if it brings it).

Every change that reached a watch is logged with the optimizer's estimates and the seconds
it took (producer and consumers, ``measured_seconds``) in ``choices``, which the engine
hands to the staff dashboard's Redis log after its commit (``take_choices``).
"""

from __future__ import annotations

import heapq
import time
import zlib
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from matching.subscriptions.events import Event
from matching.subscriptions.language.model import WatchQuery
from matching.subscriptions.run.evaluator import Output, Subscription
from matching.subscriptions.run.multi import Failed, Member
from matching.subscriptions.watches.offers import OpenOffer, OpenOffers
from matching.subscriptions.watches.watch import Answer, WatchEngine, answer_data, changed

from .optimizer import Optimizer
from .strategies import Consumer, Producer

CONSUMERS = 4
# A family's list of changes (what a relax replica that fell behind is sent) is compacted
# into its current entries once it is this much longer than them (``_compact``).
LOG_SLACK = 1024


def consumer_of(watch: Hashable, consumers: int = CONSUMERS) -> int:
    return zlib.crc32(str(watch).encode()) % consumers


def hosted(sub: Subscription) -> bool:
    """Whether the hub takes ``sub``: a form 4 watch (a ``WatchEngine``)."""
    return isinstance(sub.engine, WatchEngine)


class WatchHub:
    """One engine's live watches over one shared book (the module docstring). It has the
    part of ``SubscriptionSet``'s interface the engine uses: ``add``, ``remove``,
    ``subscription``, ``push``, ``in`` and ``len``."""

    def __init__(
        self,
        consumers: int = CONSUMERS,
        optimizer: Optimizer | None = None,
        *,
        log_slack: int = LOG_SLACK,
    ) -> None:
        self.optimizer = optimizer or Optimizer()
        self.count = consumers
        self.log_slack = log_slack
        self.subs: dict[Hashable, Subscription] = {}
        self.choices: list[dict[str, Any]] = []  # measured, not yet taken by the engine
        self._empty()

    def _empty(self) -> None:
        self.producer = Producer("auto", self.optimizer)
        self.consumers = [Consumer() for _ in range(self.count)]
        self.single: dict[Hashable, Answer | None] = {}  # single-offer watches' last answers
        self.by_offer: dict[int, set[Hashable]] = {}
        self.last_seq: int | None = None
        self._events = 0

    def __len__(self) -> int:
        return len(self.subs)

    def __contains__(self, sub_id: object) -> bool:
        return sub_id in self.subs

    @property
    def offers(self) -> OpenOffers:
        """The open offers where the hub stands (held once)."""
        return self.producer.book.offers

    # -- watches -------------------------------------------------------------------------

    def add(self, sub_id: Hashable, sub: Subscription) -> None:
        """Hold ``sub``, a live watch standing where the hub does (``ValueError``, nothing
        changed, for an id already held, a finished or not yet live one, or another form)."""
        engine = sub.engine
        if sub_id in self.subs:
            raise ValueError(f"watch {sub_id!r} is already in the hub")
        if not isinstance(engine, WatchEngine) or not sub.live or sub.finished:
            raise ValueError(f"subscription {sub_id!r} is not a live watch")
        if not self.subs:  # it brings the open offers
            self.producer.book.offers = engine.offers.copy() if engine.borrowed else engine.offers
            self.last_seq = engine.last_seq
        q = engine.q
        if q.func is None:
            assert q.offer is not None
            self.single[sub_id] = engine.last
            self.by_offer.setdefault(q.offer, set()).add(sub_id)
        else:
            consumer = consumer_of(sub_id, self.count)
            self.consumers[consumer].handle(self.producer.register(sub_id, q, consumer))
            # its answer now is notified already; what it compares with is what it was told
            self.consumers[consumer].last[sub_id] = engine.last
        self.subs[sub_id] = sub
        engine.offers, engine.borrowed, engine.shared = OpenOffers(), False, True
        engine.unranked = False
        engine.ranked.clear()
        engine.rank_of.clear()

    def remove(self, sub_id: Hashable) -> Subscription:
        """Stop holding ``sub_id``; its subscription with its own copy of the open offers,
        ready to be fed on alone (``KeyError``, nothing changed, if it is not held)."""
        sub = self.detached(sub_id)
        self.discard(sub_id)
        return sub

    def discard(self, sub_id: Hashable) -> None:
        """Stop holding ``sub_id`` (``KeyError`` if it is not held)."""
        sub = self.subs.pop(sub_id)
        q = sub.query
        assert isinstance(q, WatchQuery)
        if q.func is None:
            del self.single[sub_id]
            assert q.offer is not None
            watching = self.by_offer[q.offer]
            watching.discard(sub_id)
            if not watching:
                del self.by_offer[q.offer]
        else:
            consumer = self.producer.unregister(sub_id)
            self.consumers[consumer].handle({"unregister": [sub_id]})
        if not self.subs:
            self._empty()  # the book goes: the next watch brings one where it stands

    def subscription(self, sub_id: Hashable) -> Subscription:
        """``sub_id``'s subscription as a checkpoint stores it: its answer, and no offers
        (``shared``: they are the hub's, dumped once by ``book_dump``)."""
        sub = self.subs[sub_id]
        engine = sub.engine
        assert isinstance(engine, WatchEngine)
        engine.last = self._last(sub_id, engine.q)
        if self.last_seq is not None:
            engine.last_seq = self.last_seq
        return sub

    def detached(self, sub_id: Hashable) -> Subscription:
        """A copy of ``sub_id``'s subscription with its own open offers (a copy of the
        book's), as its evaluator fed alone would be; the hub keeps its own."""
        held = self.subscription(sub_id)
        engine = held.engine
        assert isinstance(engine, WatchEngine)
        sub = Subscription(held.query, now=held.now, limits=held.limits)
        sub.n, sub.live = held.n, held.live
        sub.finished, sub.suspended = held.finished, held.suspended
        own = sub.engine
        assert isinstance(own, WatchEngine)
        own.registered, own.last_seq, own.last = engine.registered, engine.last_seq, engine.last
        own.offers = self.offers.copy()  # now: the book moves on with the hub
        if own.q.func is not None:
            for offer in own.offers.offers:
                own._rerank(offer)
        return sub

    def _last(self, sub_id: Hashable, q: WatchQuery) -> Answer | None:
        if q.func is None:
            return self.single[sub_id]
        return self.consumers[consumer_of(sub_id, self.count)].last[sub_id]

    # -- events --------------------------------------------------------------------------

    def push(self, e: Event) -> list[tuple[Hashable, Output]]:
        """The outputs of one public event, as ``(watch id, output)``."""
        if not self.subs:
            return []
        self.last_seq = e.seq
        started = time.perf_counter()
        producer = self.producer
        messages = producer.change(e)
        out: list[tuple[Hashable, Output]] = []
        busy = reached = 0.0
        for consumer, message in messages:
            held = self.consumers[consumer]
            for note in held.handle(message):
                sub = self.subs[note.watch]
                out.extend((note.watch, o) for o in sub.deliver(e.seq, [(note.seq, note.data)], 0))
            busy += held.work["seconds"]
            reached += held.work["watches"]
        offer = e.values.get("offer")
        if isinstance(offer, int) and offer in self.by_offer:
            row = self.offers.get(offer)
            for sub_id in sorted(self.by_offer[offer], key=str):
                sub = self.subs[sub_id]
                q = sub.query
                assert isinstance(q, WatchQuery)
                new = _answer(q.attribute, offer, row)
                if changed(self.single[sub_id], new, q.threshold):
                    self.single[sub_id] = new
                    out.extend(
                        (sub_id, o) for o in sub.deliver(e.seq, [(e.seq, answer_data(new))], 0)
                    )
        if producer.last_choice is not None:
            self.optimizer.observe("watch", busy, reached)
            self.choices.append(
                {**self.optimizer.log[-1], "measured_seconds": time.perf_counter() - started}
            )
        self._events += 1
        if self._events % self.log_slack == 0:
            self._compact()
        return out

    def take_choices(self) -> list[dict[str, Any]]:
        """The choices logged since the last call, oldest first."""
        taken, self.choices = self.choices, []
        return taken

    def _compact(self) -> None:
        """Bound each family's list of changes: one much longer than the family becomes
        its entries (as changes from nothing), and the consumers' replicas of it are
        dropped, so that their next relax message rebuilds them from those. The book and
        every watch's answer are unchanged: only what relax sends to catch up is."""
        producer = self.producer
        for name, family in producer.book.families.items():
            if len(family.log) <= len(family.entries) + self.log_slack:
                continue
            family.log = list(family.entries.items())
            for consumer, held in enumerate(self.consumers):
                held.replicas.pop(name, None)
                producer.cursor.pop((consumer, name), None)


def _answer(attribute: str, offer: int, row: OpenOffer | None) -> Answer | None:
    """A single-offer watch's answer (``WatchEngine._answer_of``)."""
    if row is None or attribute not in row.values:
        return None
    return Answer(offer, row.values[attribute], row.shown[attribute])


def advance_watches(
    members: Sequence[Member], events: Iterable[tuple[Hashable | None, Event]], *, upto: int
) -> None:
    """``multi.advance_members`` for form 4 watches (``hosted``) that are not live yet in a
    hub, over ONE book of open offers for all of them (the module docstring, *Catching
    up*): each gets exactly what feeding it alone would give. ``events``: every event of
    the log after the smallest cursor up to ``upto``, with its owner, in ``seq`` order."""
    waiting = sorted((m for m in members if not _done(m)), key=lambda m: m.cursor)
    if not waiting:
        return
    book = _watch(waiting[0]).offers.copy()  # the book at the lowest cursor, advanced here
    following: list[tuple[int, int, Member]] = []  # in their history: a heap by seam
    registered: list[Member] = []
    joined = 0
    seen = _Seen()

    def join(m: Member) -> None:
        _watch(m).follow(book)  # no event between the book's place and the member's
        if m.sub.live:
            registered.append(m)
        else:
            heapq.heappush(following, (m.seam, joined, m))

    for owner, e in events:
        seq = e.seq
        if seq <= waiting[0].cursor:
            continue  # before every member: the book starts after it
        while joined < len(waiting) and waiting[joined].cursor < seq:
            joined += 1
            join(waiting[joined - 1])
        while following and following[0][0] < seq:  # its history is over before ``e``
            m = heapq.heappop(following)[2]
            _register(m, seen, seq)
            if not _done(m):
                registered.append(m)
        seen.saw(owner, seq)
        if owner is not None:
            continue  # offer and best_offer events are public (SPEC 5.6): the book stays
        offer = book.apply(e)
        if offer is None:
            continue  # no answer (nor ranking) moves on an event that changed no offer
        for m in registered:
            if _done(m):
                continue
            engine = _watch(m)
            try:
                found = engine.moved(e, offer)
                m.outputs.extend(m.sub.deliver(seq, found, engine.kept_events, engine.kept_bytes))
            except Exception as exc:  # the others go on (``advance_members``)
                m.failed = Failed(seq, exc)
    while joined < len(waiting):  # no event after their cursor: the book is theirs
        joined += 1
        join(waiting[joined - 1])
    for _, _, m in sorted(following, key=lambda entry: entry[:2]):
        engine = _watch(m)
        if upto >= m.seam:
            _register(m, seen, None)
        else:  # what its registration's notification will carry
            engine.last_seq = seen.last(m, engine.last_seq)


class _Seen:
    """The last ``seq`` of the events read, public, of each owner and of any: the last one
    a member saw is the greatest of those it may see and its own before."""

    def __init__(self) -> None:
        self.public: int | None = None
        self.any: int | None = None
        self.by_owner: dict[Hashable, int] = {}

    def saw(self, owner: Hashable | None, seq: int) -> None:
        self.any = seq
        if owner is None:
            self.public = seq
        else:
            self.by_owner[owner] = seq

    def last(self, m: Member, before: int | None) -> int | None:
        seqs = [before, self.public, self.by_owner.get(m.viewer) if m.viewer is not None else None]
        if m.sees_all:
            seqs.append(self.any)
        known = [s for s in seqs if s is not None]
        return max(known) if known else None


def _register(m: Member, seen: _Seen, seq: int | None) -> None:
    """``m``'s history is over (before the event ``seq``, or at the end of the stretch):
    its first notification, the answer where the book stands."""
    engine = _watch(m)
    engine.last_seq = seen.last(m, engine.last_seq)
    try:
        m.outputs.extend(m.sub.history_done())
    except Exception as exc:
        m.failed = Failed(seq if seq is not None else m.cursor, exc)


def _watch(m: Member) -> WatchEngine:
    engine = m.sub.engine
    assert isinstance(engine, WatchEngine)
    return engine


def _done(m: Member) -> bool:
    return m.failed is not None or m.sub.finished
