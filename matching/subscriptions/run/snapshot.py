"""A subscription's evaluator as an explicit, versioned snapshot: plain data, no pickle.

The exchange checkpoints live subscriptions in the database (issue 35): the evaluator
after the events up to a cursor. A snapshot is ``MAGIC``, a two-byte ``VERSION`` and a
msgpack body holding the *state* only:

* the query's canonical text (``to_text``), ``now`` and the limits: on load the text is
  parsed and the ``Subscription`` built again, so a pattern's conditions are compiled to
  closures afresh and nothing of the code is stored;
* the subscription's counters (``n``, ``live``, ``finished``, ``suspended``);
* ``events``: every event the state holds, once (the raw dict as the log gave it; the
  typed values are read again with ``event_from_dict``). The state names them by their
  index in that table, so events shared by several windows, aliases or instances are
  shared again after a load (a composite tells a tuple's events apart by identity);
* ``engine``: per kind, what the events changed (below). What follows from the query and
  ``now`` (time bounds, compiled tests, hash keys, thresholds) or from the rest of the
  state (a composite's counts and join index, a watch's ranking, a pattern's buckets,
  sorted thresholds and expiry heap) is not stored but rebuilt by the code that builds it
  while running.

Values keep their types exactly: a ``Decimal`` as its string (``1.00`` stays ``1.00``), a
``datetime`` in ISO 8601 with its offset (and its ``fold``), a tuple as a tuple (msgpack extension types
``DECIMAL``, ``DATETIME``, ``TUPLE``); any other type than msgpack's own is refused when
dumping (``TypeError``), never written approximately.

A form 4 watch held by the subscription engine's ``WatchHub`` (its open offers held once
for all the engine's watches, ``matching/dissemination/hosted.py``) is dumped without them
(``"offers": None``, version 2): they are the engine's *book*, dumped once per checkpoint
by ``book_dump`` with the cursor it stands at, and a load is given them (``offers``).
Without them such a snapshot is stale (rebuilt by replay, below). A watch's ``whole`` says
whether its own offers hold every offer event (not once a ``SubscriptionSet`` pushed it its
subject's only); absent (a snapshot of before it), it reads as False.

Versions. ``snapshot_load`` reads ``VERSION``, and an older version for which ``UPGRADES``
has a step (a function from that version's body to the next version's). Anything else that
is not a current snapshot (a newer or unknown version, an older one without an upgrade, or
a pickle of the releases before snapshots) raises ``SnapshotStale``: the caller rebuilds
the evaluator by replaying the log from the subscription's start (its registration's
cursor), which gives the same state since the evaluator is deterministic
(``exchange/subscription_engine/engine.py``). Bytes that are none of these raise
``SnapshotError``.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import re
import weakref
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict
from decimal import Decimal
from typing import Any

import msgpack

from matching import Type
from matching.subscriptions.events import Event, event_from_dict, parse_timestamp
from matching.subscriptions.language.model import Query
from matching.subscriptions.language.parser import parse_query
from matching.subscriptions.language.printer import to_text
from matching.subscriptions.language.schema import EVENT_SCHEMA
from matching.subscriptions.patterns.automaton import Instance, PatternEngine
from matching.subscriptions.watches.offers import OFFER_SCHEMA, OpenOffer, OpenOffers
from matching.subscriptions.watches.watch import Answer, WatchEngine

from .atomic import AtomicEngine
from .composite import CompositeEngine
from .evaluator import Subscription
from .limits import Limits

__all__ = [
    "BOOK_MAGIC",
    "BOOK_VERSION",
    "MAGIC",
    "VERSION",
    "book_dump",
    "book_load",
    "SnapshotError",
    "SnapshotStale",
    "snapshot_dump",
    "snapshot_load",
]

MAGIC = b"ISNP"
# 2: a watch's ``offers`` may be None (the engine's shared book); a body of 1 is one of 2.
VERSION = 2
# An older version's body to the next version's, by the older version.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: lambda body: body}
# The engine's shared open offers (``book_dump``), versioned on their own.
BOOK_MAGIC = b"IBOK"
BOOK_VERSION = 1

# msgpack extension types
DECIMAL = 1
DATETIME = 2
TUPLE = 3

_KINDS: dict[type, str] = {
    AtomicEngine: "atomic",
    CompositeEngine: "composite",
    PatternEngine: "pattern",
    WatchEngine: "watch",
}
# A pickle (protocol 2 and later) starts with the PROTO opcode.
_PICKLE = b"\x80"
_FOLD = "|fold"
_COUNT = re.compile(r"count\((\d+)\)\Z")


class SnapshotError(ValueError):
    """The bytes are not a snapshot this code can read."""


class SnapshotStale(SnapshotError):  # named for what it is, not a fault: the caller replays instead
    """A snapshot of another version without an upgrade, or a pickle of before snapshots:
    the evaluator is to be rebuilt by replay."""


# -- values -----------------------------------------------------------------------------


def _default(value: Any) -> msgpack.ExtType:
    t = type(value)
    if t is Decimal:
        return msgpack.ExtType(DECIMAL, str(value).encode("ascii"))
    if t is dt.datetime:
        text = value.isoformat() + (_FOLD if value.fold else "")
        return msgpack.ExtType(DATETIME, text.encode("ascii"))
    if t is tuple:
        return msgpack.ExtType(TUPLE, _pack(list(value)))
    raise TypeError(f"a snapshot holds no {t.__name__} ({value!r})")


def _pack(value: Any) -> bytes:
    # strict_types: a tuple or a subclass of a msgpack type goes to _default, not as its base
    packed: bytes = msgpack.packb(value, default=_default, strict_types=True, use_bin_type=True)
    return packed


def _ext(code: int, data: bytes) -> Any:
    if code == DECIMAL:
        return Decimal(data.decode("ascii"))
    if code == DATETIME:
        text = data.decode("ascii")
        if text.endswith(_FOLD):  # the later of a repeated wall time
            return dt.datetime.fromisoformat(text[: -len(_FOLD)]).replace(fold=1)
        return dt.datetime.fromisoformat(text)
    if code == TUPLE:
        return tuple(_unpack(data))
    raise SnapshotError(f"unknown extension type {code}")


def _unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, ext_hook=_ext, raw=False, strict_map_key=True)


def values_dump(value: Any) -> bytes:
    """``value`` as a snapshot writes values (the types of the module docstring)."""
    return _pack(value)


def values_load(data: bytes) -> Any:
    return _unpack(data)


# -- dumping ----------------------------------------------------------------------------


class _Events:
    """The event table: each event object once, by identity."""

    def __init__(self) -> None:
        self.at: dict[int, int] = {}
        self.raws: list[Any] = []

    def ref(self, e: Event) -> int:
        i = self.at.get(id(e))
        if i is None:
            i = self.at[id(e)] = len(self.raws)
            self.raws.append(e.raw)
        return i

    def refs(self, events: Any) -> list[int | None]:
        return [None if e is None else self.ref(e) for e in events]


def snapshot_dump(sub: Subscription) -> bytes:
    """``sub``'s state as a snapshot (the module docstring); ``sub`` is not changed."""
    engine = sub.engine
    kind = _KINDS[type(engine)]
    events = _Events()
    state: dict[str, Any]
    if isinstance(engine, AtomicEngine):
        state = _atomic_dump(engine, events)
    elif isinstance(engine, CompositeEngine):
        state = _composite_dump(engine, events)
    elif isinstance(engine, PatternEngine):
        state = _pattern_dump(engine, events)
    else:
        state = _watch_dump(engine)
    body = {
        "query": _text(sub.query),
        "now": sub.now,
        "limits": asdict(sub.limits),
        "n": sub.n,
        "live": sub.live,
        "finished": sub.finished,
        "suspended": sub.suspended,
        "kind": kind,
        "engine": state,
        "events": events.raws,
    }
    return MAGIC + VERSION.to_bytes(2, "big") + _pack(body)


# The texts of the queries and the queries of the texts, while some evaluator holds the
# query: a process restoring or checkpointing thousands of subscriptions parses and prints
# each distinct query once (a parse costs about a millisecond, a print a fifth of that).
_TEXTS: weakref.WeakKeyDictionary[Query, str] = weakref.WeakKeyDictionary()
_QUERIES: weakref.WeakValueDictionary[str, Query] = weakref.WeakValueDictionary()


def _text(query: Query) -> str:
    try:
        text = _TEXTS.get(query)
        if text is None:
            text = _TEXTS[query] = to_text(query)
    except TypeError:  # a query that cannot be hashed is printed each time
        return to_text(query)
    return text


def _sliding(engine: AtomicEngine) -> bool:
    """Whether the windows are HAVING's sliding ones (``AtomicEngine.event``)."""
    return not engine.aggregates and engine.q.having is not None


def _atomic_dump(engine: AtomicEngine, events: _Events) -> dict[str, Any]:
    if _sliding(engine):
        windows = [
            [key, [[events.ref(entry[0]), entry[1]] for entry in window]]
            for key, window in engine.windows.items()
        ]
    else:
        windows = [[key, events.refs(window)] for key, window in engine.windows.items()]
    return {"kept": engine.kept, "bytes": engine.bytes, "windows": windows}


def _composite_dump(engine: CompositeEngine, events: _Events) -> dict[str, Any]:
    return {
        "kept": {alias: events.refs(kept) for alias, kept in engine.kept.items()},
        "bytes": engine.bytes,
        "useful": [a for a in engine.aliases if a in engine.useful],
        "closing": engine.closing,
    }


def _count(counter: itertools.count[int]) -> int:
    """The next value of ``counter``, read without taking it."""
    found = _COUNT.match(repr(counter))
    assert found is not None, repr(counter)
    return int(found.group(1))


def _pattern_dump(engine: PatternEngine, events: _Events) -> dict[str, Any]:
    # ``_routed`` and ``_given`` are for the next event only (``multi.py``): not state
    owners: dict[int, int] = {}  # a counter of instance ids, by identity: the first side using it
    sides = []
    for automaton in engine.sides:
        instances = [
            [
                inst.node,
                events.refs(inst.bound),
                events.refs(inst.last),
                inst.aggregates,
                inst.running,
                inst.id,
            ]
            for inst in automaton.instances()
        ]
        sides.append(
            {
                "ids": [
                    _count(automaton.ids),
                    owners.setdefault(id(automaton.ids), automaton.side),
                ],
                "live": automaton.live,
                "touched": automaton.touched,
                "now": automaton.now,
                "instances": instances,
            }
        )
    return {"sides": sides}


def _offers_dump(offers: OpenOffers) -> list[list[Any]]:
    # the typed values are read again from the shown ones (_offers_load)
    return [[offer, row.shown] for offer, row in offers.offers.items()]


def _watch_dump(engine: WatchEngine) -> dict[str, Any]:
    last = engine.last
    return {
        # None: the engine's shared book holds them (the module docstring)
        "offers": None if engine.shared else _offers_dump(engine.offers),
        # (read as False when absent: a snapshot of before it may hold its subject's only)
        "whole": engine.whole,
        "registered": engine.registered,
        "last_seq": engine.last_seq,
        "last": None if last is None else [last.offer, last.value, last.shown],
    }


# -- loading ----------------------------------------------------------------------------


def snapshot_load(
    raw: bytes,
    query: Query | None = None,
    *,
    offers: Callable[[], OpenOffers | None] | None = None,
) -> Subscription:
    """The subscription a snapshot holds, ready to be fed the events after it.
    ``query``, if given, is its parsed query (else the snapshot's text is parsed).
    ``offers`` gives the shared open offers at the snapshot's cursor (``book_load``), asked
    only by a watch dumped without its own; the watch borrows them (``WatchEngine._own``).
    ``SnapshotStale`` for a snapshot of another version without an upgrade or a pickle,
    or a watch without its own offers when ``offers`` gives none; ``SnapshotError`` for
    bytes that are no snapshot."""
    raw = bytes(raw)
    if raw.startswith(_PICKLE):
        raise SnapshotStale("a pickled evaluator of before snapshots")
    if not raw.startswith(MAGIC) or len(raw) < len(MAGIC) + 2:
        raise SnapshotError("not a subscription snapshot")
    version = int.from_bytes(raw[len(MAGIC) : len(MAGIC) + 2], "big")
    if version > VERSION or (version < VERSION and version not in UPGRADES):
        raise SnapshotStale(f"a snapshot of version {version}; this code reads {VERSION}")
    try:
        body = _unpack(raw[len(MAGIC) + 2 :])
    except (ValueError, msgpack.UnpackException) as exc:
        raise SnapshotError(f"a damaged snapshot: {exc}") from exc
    while version < VERSION:
        upgrade = UPGRADES.get(version)
        if upgrade is None:
            raise SnapshotStale(f"no upgrade from snapshot version {version}")
        body = upgrade(body)
        version += 1
    try:
        return _build(body, query, offers)
    except SnapshotStale:
        raise
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise SnapshotError(f"a damaged snapshot: {type(exc).__name__}: {exc}") from exc


def _parsed(text: str) -> Query:
    query = _QUERIES.get(text)
    if query is None:
        query = _QUERIES[text] = parse_query(text)
    return query


def _build(
    body: dict[str, Any], query: Query | None, offers: Callable[[], OpenOffers | None] | None
) -> Subscription:
    sub = Subscription(
        _parsed(body["query"]) if query is None else query,
        now=body["now"],
        limits=Limits(**body["limits"]),
    )
    if _KINDS[type(sub.engine)] != body["kind"]:
        raise SnapshotError(f"a {body['kind']} snapshot for a {_KINDS[type(sub.engine)]} query")
    sub.n, sub.live = body["n"], body["live"]
    sub.finished, sub.suspended = body["finished"], body["suspended"]
    events = [event_from_dict(raw) for raw in body["events"]]
    engine, state = sub.engine, body["engine"]
    if isinstance(engine, AtomicEngine):
        _atomic_load(engine, state, events)
    elif isinstance(engine, CompositeEngine):
        _composite_load(engine, state, events)
    elif isinstance(engine, PatternEngine):
        _pattern_load(engine, state, events)
    else:
        _watch_load(engine, state, offers)
    return sub


def _atomic_load(engine: AtomicEngine, state: dict[str, Any], events: list[Event]) -> None:
    engine.kept, engine.bytes = state["kept"], state["bytes"]
    if _sliding(engine):
        assert engine.q.having is not None
        n = engine.q.having.aggregate.n
        engine.windows = {
            key: deque(([events[i], seen] for i, seen in window), maxlen=n)
            for key, window in state["windows"]
        }
    else:
        engine.windows = {key: [events[i] for i in window] for key, window in state["windows"]}


def _composite_load(engine: CompositeEngine, state: dict[str, Any], events: list[Event]) -> None:
    kept = state["kept"]
    engine.kept = {a: [events[i] for i in kept[a]] for a in engine.aliases}
    engine.bytes = state["bytes"]
    engine.useful = set(state["useful"])
    engine.closing = state["closing"]
    # The counts and the join index are appended with the kept events and emptied with
    # them (``CompositeEngine.event`` and ``_close``): they follow from them.
    engine.holders = Counter(e.seq for a in engine.aliases for e in engine.kept[a])
    for alias, (attribute, _, _) in engine.probes.items():
        index: dict[Any, list[Event]] = {}
        for e in engine.kept[alias]:
            if attribute in e.values:
                index.setdefault(e.values[attribute], []).append(e)
        engine.index[alias] = index


def _pattern_load(engine: PatternEngine, state: dict[str, Any], events: list[Event]) -> None:
    counters: dict[int, itertools.count[int]] = {}
    for automaton, side in zip(engine.sides, state["sides"], strict=True):
        following, owner = side["ids"]
        automaton.ids = counters.setdefault(owner, itertools.count(following))
        for node, bound, last, aggregates, running, ident in side["instances"]:
            inst = Instance(
                node,
                tuple(events[i] for i in bound),
                tuple(None if i is None else events[i] for i in last),
                aggregates,
                running,
                ident,
            )
            # Where the instance waits follows from its state: entered again in the order
            # it was held, it goes into its bucket (hash key), its threshold's order and
            # the expiry heap as it did (an instance that has arrived is not changed).
            automaton._enter(inst, new=True)
        automaton.live = side["live"]
        automaton.touched = side["touched"]
        automaton.now = side["now"]


def _offer_value(name: str) -> Callable[[Any], Any]:
    """How an open offer's attribute ``name`` is typed from the value its event carried, as
    ``events.event_from_dict`` typed it once checked (``best_value`` is a ``best_offer``'s
    ``value``)."""
    source = "value" if name == "best_value" else name
    kind = EVENT_SCHEMA[source]
    if kind is Type.DECIMAL:
        return Decimal  # of an int or a decimal string, as the event's value was made
    if kind is Type.TIMESTAMP:
        return functools.partial(parse_timestamp, what=source)
    return _same  # an int or a string: as the event carried it


def _same(value: Any) -> Any:
    return value


_OFFER_VALUE = {name: _offer_value(name) for name in OFFER_SCHEMA}


def _offers_load(rows: list[list[Any]]) -> OpenOffers:
    offers = OpenOffers()
    for offer, shown in rows:
        values = {name: _OFFER_VALUE[name](value) for name, value in shown.items()}
        offers.offers[offer] = OpenOffer(values, shown)
    return offers


def _watch_load(
    engine: WatchEngine, state: dict[str, Any], shared: Callable[[], OpenOffers | None] | None
) -> None:
    if state["offers"] is None:
        book = None if shared is None else shared()
        if book is None:
            raise SnapshotStale(
                "a watch checkpointed with the engine's shared open offers, which are not "
                "at hand at its cursor"
            )
        # ranked when an answer is first asked (``WatchEngine.rank``)
        engine.offers, engine.borrowed, engine.unranked = book, True, True
    else:
        engine.offers = _offers_load(state["offers"])
        if engine.q.func is not None:
            for offer in engine.offers.offers:
                engine._rerank(offer)
    engine.whole = state.get("whole", False)
    engine.registered = state["registered"]
    engine.last_seq = state["last_seq"]
    last = state["last"]
    engine.last = None if last is None else Answer(*last)


# -- the engine's shared open offers ------------------------------------------------------


def book_dump(offers: OpenOffers, cursor: int) -> bytes:
    """The open offers at ``cursor`` (the subscription engine's ``WatchHub``), read by
    ``book_load``: ``BOOK_MAGIC``, a two-byte ``BOOK_VERSION`` and msgpack."""
    body = {"cursor": cursor, "offers": _offers_dump(offers)}
    return BOOK_MAGIC + BOOK_VERSION.to_bytes(2, "big") + _pack(body)


def book_load(raw: bytes) -> tuple[int, OpenOffers]:
    """The cursor and the open offers of a ``book_dump``; ``SnapshotStale`` for another
    version (the watches that need it are rebuilt by replay), ``SnapshotError`` for bytes
    that are no book."""
    raw = bytes(raw)
    if not raw.startswith(BOOK_MAGIC) or len(raw) < len(BOOK_MAGIC) + 2:
        raise SnapshotError("not a book of open offers")
    version = int.from_bytes(raw[len(BOOK_MAGIC) : len(BOOK_MAGIC) + 2], "big")
    if version != BOOK_VERSION:
        raise SnapshotStale(f"a book of version {version}; this code reads {BOOK_VERSION}")
    try:
        body = _unpack(raw[len(BOOK_MAGIC) + 2 :])
        return body["cursor"], _offers_load(body["offers"])
    except (KeyError, IndexError, TypeError, ValueError, msgpack.UnpackException) as exc:
        raise SnapshotError(f"a damaged book: {type(exc).__name__}: {exc}") from exc
