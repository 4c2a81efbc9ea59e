"""Evaluator snapshots (``matching.subscriptions.run.snapshot``, issue 35): for generated queries
of the four forms and generated logs, a subscription snapshotted after any of its events
and loaded gives exactly the outputs it gives uninterrupted, and holds the same state;
values keep their types; a snapshot is plain data, not a pickle; one of another version or
a pickle is refused as stale (the engine then replays: ``tests/subscriptions``)."""

from __future__ import annotations

import datetime as dt
import pickle
from collections import deque
from decimal import Decimal
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matching.subscriptions import Subscription, event_from_dict, parse_query, run_offline
from matching.subscriptions.patterns.automaton import PatternEngine
from matching.subscriptions.run import snapshot as snapshot_module
from matching.subscriptions.run.atomic import AtomicEngine
from matching.subscriptions.run.composite import CompositeEngine
from matching.subscriptions.run.snapshot import (
    DATETIME,
    DECIMAL,
    MAGIC,
    TUPLE,
    VERSION,
    SnapshotError,
    SnapshotStale,
    snapshot_dump,
    snapshot_load,
    values_dump,
    values_load,
)
from tests.matching.subscriptions import test_multi as multi_cases
from tests.matching.subscriptions.test_form4_properties import flows, watches
from tests.matching.subscriptions.test_pattern_properties import sides, streams
from tests.matching.subscriptions.test_subscription_properties import (
    event_files,
    form1_queries,
    form2_queries,
    nows,
    registration,
)

LIMITS = st.sampled_from([None, None, 2, 3])  # small state limits suspend some


def feed(
    text: str, events: list[dict[str, Any]], now: dt.datetime, limit: int | None, cuts: set[int]
) -> list[dict[str, Any]]:
    """``run_offline``'s loop, the subscription replaced by the load of its snapshot before
    the events whose index is in ``cuts`` (``len(events)``: before ``history_done``); each
    snapshot is checked to hold the state it was taken of."""
    sub = Subscription(parse_query(text), now=now, state_limit=limit)
    out: list[dict[str, Any]] = []
    for i, raw in enumerate([*events, None]):
        if i in cuts:
            sub = reloaded(sub)
        if raw is None or sub.finished:
            break
        e = event_from_dict(raw)
        out += [o.to_json() for o in sub.push(e, live=e.time >= now)]
    out += [o.to_json() for o in sub.history_done()]
    if len(events) + 1 in cuts:  # after the end of history too
        reloaded(sub)
    return out


def reloaded(sub: Subscription) -> Subscription:
    raw = snapshot_dump(sub)
    loaded = snapshot_load(raw)
    assert state(loaded) == state(sub)
    assert snapshot_dump(loaded) == raw  # nothing lost or changed on the way
    return loaded


def state(sub: Subscription) -> Any:
    """Everything an evaluator holds, as comparable data: what the snapshot stores and
    what loading rebuilds from it (a composite's counts and index, a watch's ranking, a
    pattern's buckets, thresholds and expiry heap)."""
    e = sub.engine
    common = (sub.query, sub.now, sub.end, sub.limits, sub.state_limit, sub.n, sub.live,
              sub.finished, sub.suspended, type(e))  # fmt: skip
    if isinstance(e, AtomicEngine):
        windows = [
            (k, [list(x) if isinstance(x, list) else x for x in w], getattr(w, "maxlen", "list"))
            for k, w in e.windows.items()
        ]
        return common, e.start, e.end, e.kept, e.bytes, windows
    if isinstance(e, CompositeEngine):
        kept = {a: [id(x) for x in v] for a, v in e.kept.items()}  # shared objects stay shared
        return (
            common,
            e.kept,
            kept_shape(kept),
            dict(e.holders),
            e.bytes,
            e.index,
            e.useful,
            e.closing,
        )
    if isinstance(e, PatternEngine):
        out = []
        for a in e.sides:
            nodes = [
                (
                    [(k, [instance(i) for i in b.values()]) for k, b in n.waiting.items()],
                    {k: list(v) for k, v in n.ranked.items()},
                    {k: [instance(i) for i in v.values()] for k, v in n.loose.items()},
                )
                for n in a.nodes
            ]
            expiry = sorted((t, i) for t, i, inst in a.expiry if inst.alive)
            out.append((nodes, expiry, a.live, a.touched, a.now, repr(a.ids)))
        return common, out, len({id(a.ids) for a in e.sides})
    offers = {k: (r.values, r.shown) for k, r in e.offers.offers.items()}
    return common, offers, list(e.ranked), e.rank_of, e.registered, e.last_seq, e.last


def kept_shape(kept: dict[str, list[int]]) -> list[list[int]]:
    """Which kept events are one object, as positions of their first sighting."""
    first: dict[int, int] = {}
    return [[first.setdefault(x, len(first)) for x in v] for v in kept.values()]


def instance(i: Any) -> tuple[Any, ...]:
    return (i.node, i.bound, i.last, i.aggregates, i.running, i.key, i.threshold, i.id, i.alive)


def check(text: str, events: list[dict[str, Any]], now: dt.datetime, limit: int | None,
          cuts: set[int]) -> None:  # fmt: skip
    expected = list(run_offline(parse_query(text), events, now=now, state_limit=limit))
    assert feed(text, events, now, limit, set()) == expected, text  # the loop is run_offline's
    assert feed(text, events, now, limit, cuts) == expected, (text, sorted(cuts))


def cut_points(n: int) -> st.SearchStrategy[set[int]]:
    return st.sets(st.integers(0, n + 1), min_size=1)


PLENTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PLENTY
@given(form1_queries(), event_files(), nows(), LIMITS, st.data())
def test_form1_snapshotted_anywhere_goes_on_as_uninterrupted(q, events, now, limit, data):
    now = registration(events, now)
    check(q.text, events, now, limit, data.draw(cut_points(len(events))))


@PLENTY
@given(form2_queries(), event_files(max_size=10), nows(), LIMITS, st.data())
def test_form2_snapshotted_anywhere_goes_on_as_uninterrupted(q, events, now, limit, data):
    now = registration(events, now)
    check(q.text, events, now, limit, data.draw(cut_points(len(events))))


@PLENTY
@given(streams(), st.lists(sides(), min_size=1, max_size=2), LIMITS, st.data())
def test_form3_snapshotted_anywhere_goes_on_as_uninterrupted(events, generated, limit, data):
    text = " UNION ".join(s.text for s in generated)
    now = event_from_dict(events[data.draw(st.integers(0, len(events) - 1))]).time
    check(text, events, now, limit, data.draw(cut_points(len(events))))


@st.composite
def indexed_patterns(draw: st.DrawFn) -> str:
    """The patterns of ``test_multi`` whose instances are hashed by a key and sorted by a
    threshold, with FOLDs, ``WITHIN`` and ``UNION``."""
    template = draw(
        st.sampled_from(multi_cases.FORM3 + multi_cases.THRESHOLDS + multi_cases.BOUNDS)
    )
    within = draw(st.none() | st.integers(0, 20))
    return template.format(
        p=draw(st.sampled_from(multi_cases.PRICES)),
        m=draw(st.integers(0, 20)),
        o=draw(st.integers(1, 3)),
        s=draw(st.sampled_from(multi_cases.SUBJECTS)),
        c=draw(st.sampled_from(multi_cases.ORDERS)),
        r=draw(st.sampled_from(multi_cases.ORDERS)),
        d=draw(st.integers(0, 20)),
        n=draw(st.integers(1, 3)),
        q=draw(st.sampled_from(["0", "0.05", "0.1"])),
        k=draw(st.sampled_from(multi_cases.FACTORS)),
        x=draw(st.sampled_from(multi_cases.PRICES)),
        y=draw(st.sampled_from(multi_cases.PRICES)),
        op=draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="])),
        within="" if within is None else f" WITHIN {within}m",
    )


@PLENTY
@given(indexed_patterns(), st.integers(1, 24).flatmap(multi_cases.events), LIMITS, st.data())
def test_indexed_patterns_snapshotted_anywhere_go_on_as_uninterrupted(text, events, limit, data):
    now = event_from_dict(events[0]).time
    check(text, events, now, limit, data.draw(cut_points(len(events))))


@PLENTY
@given(flows(), watches(), st.data())
def test_form4_snapshotted_anywhere_goes_on_as_uninterrupted(flow, w, data):
    events = flow.events
    registered = data.draw(st.integers(0, len(events)))  # events before it are history
    now = event_from_dict({"seq": 1, "time": flow.time(registered + 1), "type": "x",
                           "subject": "x"}).time  # fmt: skip
    check(w["text"], events, now, None, data.draw(cut_points(len(events))))


# -- values ------------------------------------------------------------------------------


def typed(value: Any) -> Any:
    """``value`` with every type and digit spelled out: ``1.0`` and ``1.00``, a tuple and a
    list, ``1`` and ``True`` and ``1.0`` are told apart."""
    if isinstance(value, list | tuple):
        return (type(value).__name__, [typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, dt.datetime):
        return ("datetime", value.isoformat(), value.utcoffset(), value.fold)
    return (type(value).__name__, repr(value))


OFFSETS = st.integers(-23 * 60 + 1, 23 * 60 - 1).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
LEAVES = (
    st.decimals(allow_nan=True, allow_infinity=True)
    | st.datetimes(timezones=st.none() | st.just(dt.UTC) | OFFSETS)
    | st.integers(-(2**63), 2**64 - 1)
    | st.text()
    | st.booleans()
    | st.none()
    | st.floats(allow_nan=False)
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_decimals_datetimes_and_tuples_come_back_exactly(value):
    assert typed(values_load(values_dump(value))) == typed(value)


def test_a_value_of_another_type_is_refused_rather_than_written_approximately():
    with pytest.raises(TypeError, match="a snapshot holds no date"):
        values_dump([dt.date(2026, 11, 20)])
    with pytest.raises(TypeError, match="a snapshot holds no set"):
        values_dump({"a": {1}})


# -- plain data, versions ----------------------------------------------------------------

RISE = (
    "SELECT a.price, b.price, n, s FROM FILTER{type = 'trade'}(EVENTS) AS a "
    "FOLD{b.subject = a.subject, b.price > b.last.price, COUNT AS n, SUM(b.price) AS s} "
    "FILTER{type = 'trade'}(EVENTS) AS b WHERE n >= 3 WITHIN 30m"
)
NOW = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)


def trades(prices: list[str]) -> list[dict[str, Any]]:
    return [
        {"seq": i, "time": f"2026-11-20T10:{i:02d}:00Z", "type": "trade",
         "subject": "office.supplies.pencils", "offer": 1, "trade": i, "price": p,
         "quantity": 5}
        for i, p in enumerate(prices, 1)
    ]  # fmt: skip


def rising() -> Subscription:
    """A pattern (compiled to closures) holding instances, with a FOLD's running sums."""
    sub = Subscription(parse_query(RISE), now=NOW)
    for e in trades(["1.00", "1.10", "1.20"]):
        sub.push(e, live=True)
    assert sub.engine.kept_events > 0
    return sub


def test_a_snapshot_is_plain_data_and_no_pickle():
    raw = snapshot_dump(rising())
    assert raw[: len(MAGIC) + 2] == MAGIC + VERSION.to_bytes(2, "big")
    leaves: list[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, msgpack.ExtType):
            assert value.code in (DECIMAL, DATETIME, TUPLE)
            if value.code == TUPLE:
                walk(msgpack.unpackb(value.data, ext_hook=msgpack.ExtType))
            else:
                leaves.append(value.data.decode("ascii"))  # a number or a time as text
        else:
            assert value is None or type(value) in (str, int, float, bool), value
            leaves.append(value)

    body = msgpack.unpackb(raw[len(MAGIC) + 2 :], ext_hook=msgpack.ExtType)
    walk(body)
    assert body["query"] == (
        "SELECT a.price, b.price, n, s FROM FILTER{type = 'trade'}(EVENTS) AS a "
        "FOLD{b.subject = a.subject, b.price > b.last.price, COUNT AS n, SUM(b.price) AS s} "
        "FILTER{type = 'trade'}(EVENTS) AS b WHERE n >= 3 WITHIN 30m"
    )
    assert "2.30" in leaves  # the FOLD's running sum 1.10 + 1.20, a decimal as text
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(raw)  # noqa: S301 - it must not be one
    assert b"cloudpickle" not in raw and b"\x80\x05\x95" not in raw


def test_a_pickle_or_another_version_is_stale_and_garbage_is_an_error(monkeypatch):
    sub = rising()
    raw = snapshot_dump(sub)
    body = raw[len(MAGIC) + 2 :]
    form1 = Subscription(parse_query("SELECT price"), now=NOW)
    with pytest.raises(SnapshotStale, match="pickled"):
        snapshot_load(pickle.dumps(form1))
    with pytest.raises(SnapshotStale, match=f"version {VERSION + 1}"):
        snapshot_load(MAGIC + (VERSION + 1).to_bytes(2, "big") + body)
    older = MAGIC + (0).to_bytes(2, "big") + body  # a version without an upgrade
    with pytest.raises(SnapshotStale, match="version 0"):
        snapshot_load(older)
    with pytest.raises(SnapshotError, match="not a subscription snapshot") as caught:
        snapshot_load(b"not a pickle")
    assert not isinstance(caught.value, SnapshotStale)
    with pytest.raises(SnapshotError, match="damaged"):
        snapshot_load(raw[:-7])
    unknown_kind = msgpack.unpackb(body, ext_hook=msgpack.ExtType)
    unknown_kind["kind"] = "form 5"
    with pytest.raises(SnapshotError, match="a form 5 snapshot for a pattern query"):
        snapshot_load(raw[: len(MAGIC) + 2] + msgpack.packb(unknown_kind))
    del unknown_kind["engine"]
    with pytest.raises(SnapshotError, match="damaged snapshot: KeyError"):
        snapshot_load(raw[: len(MAGIC) + 2] + msgpack.packb({**unknown_kind, "kind": "pattern"}))
    # An older version with an upgrade step loads through it
    upgraded: list[int] = []

    def upgrade(old: dict[str, Any]) -> dict[str, Any]:
        upgraded.append(old["n"])
        return old

    monkeypatch.setitem(snapshot_module.UPGRADES, 0, upgrade)
    loaded = snapshot_load(older)
    assert upgraded == [sub.n] and state(loaded) == state(sub)
    # and a snapshot of version 1 (before watches could leave their offers to the engine's
    # shared book) is one of version 2
    assert VERSION == 2
    first = snapshot_load(MAGIC + (1).to_bytes(2, "big") + body)
    assert state(first) == state(sub)


def test_a_loaded_pattern_is_compiled_again_from_its_text_and_goes_on():
    sub = rising()
    loaded = snapshot_load(snapshot_dump(sub))
    assert loaded.engine is not sub.engine
    more = trades(["1.00", "1.10", "1.20", "1.30"])[3:]
    assert [o.to_json() for o in loaded.push(more[0], live=True)] == [
        o.to_json() for o in sub.push(more[0], live=True)
    ]
    assert loaded.n == sub.n == 1


def test_events_shared_by_windows_and_instances_are_stored_once():
    sub = rising()
    body = msgpack.unpackb(snapshot_dump(sub)[len(MAGIC) + 2 :], ext_hook=msgpack.ExtType)
    # three trades, bound by several instances each (a FOLD's copies share them)
    assert sorted(e["seq"] for e in body["events"]) == [1, 2, 3]


def test_a_sliding_window_keeps_its_length_and_marks():
    sub = Subscription(
        parse_query("SELECT price WHERE type = 'trade' HAVING AVG(price, 2) > 1.05"), now=NOW
    )
    for e in trades(["1.00", "1.20"]):
        sub.push(e, live=True)
    loaded = snapshot_load(snapshot_dump(sub))
    [window] = loaded.engine.windows.values()
    assert isinstance(window, deque) and window.maxlen == 2
    assert [(entry[0].seq, entry[1]) for entry in window] == [(1, True), (2, True)]
    assert isinstance(window[0][0].values["price"], Decimal)
