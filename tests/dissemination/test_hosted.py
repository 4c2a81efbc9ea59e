"""The subscription engine's ``WatchHub`` (``matching/dissemination/hosted.py``, issue 35 item
5): form 4 watches delivered by the strategy the optimizer picks, over open offers held
once, notify exactly what the one evaluator gives (``run_offline``).

On generated order flows (form 4's property test's generators), range and single-offer
watches with thresholds are registered at any point of the log (the history seam), paused
(taken out of the hub, fed alone, put back) once or again, deleted, and the hub is restarted
from a checkpoint (each watch's snapshot without offers, the book dumped once) with the
restored watches fed alone for a while before they join again (the engine's joiners). Every
watch's notifications, numbered, must be the offline contract's, and at every step the hub
keeps a family, and all it keeps for one, exactly while it holds a watch of it."""

from __future__ import annotations

import datetime as dt
import gc
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matching.dissemination import STRATEGIES, Optimizer
from matching.dissemination.hosted import WatchHub, advance_watches, consumer_of
from matching.dissemination.offers import FamilyName
from matching.dissemination.optimizer import Plan
from matching.subscriptions import Subscription, parse_query, parse_timestamp, run_offline
from matching.subscriptions.events import event_from_dict
from matching.subscriptions.run.multi import Member, SubscriptionSet
from matching.subscriptions.run.snapshot import (
    BOOK_MAGIC,
    SnapshotStale,
    book_dump,
    book_load,
    snapshot_dump,
    snapshot_load,
)
from matching.subscriptions.watches.watch import WatchEngine
from tests.matching.subscriptions.form4_cases import PENCILS, RANGE_MIN_QUERY, Flow, range_min_flow
from tests.matching.subscriptions.test_form4_properties import flows, watches


class Rotating(Optimizer):
    """Picks the strategies in turn, so that relax replicas fall behind and catch up."""

    def choose(self, seq: int | None, plan: Plan) -> str:
        choice = STRATEGIES[len(self.log) % 3]
        self.log.append({"seq": seq, "choice": choice, "estimates": {}})
        return choice


@dataclass
class Always(Optimizer):
    """Picks one strategy for every change, so that two hubs fed alike choose alike."""

    strategy: str = "enumerate"

    def choose(self, seq: int | None, plan: Plan) -> str:
        self.log.append({"seq": seq, "choice": self.strategy, "estimates": {}})
        return self.strategy


@dataclass
class Plot:
    """When each watch registers, pauses and comes back (any number of times, in order), or
    is deleted (indexes into the log: the action happens before that event), and the
    restart."""

    registered: list[int]
    paused: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    deleted: dict[int, int] = field(default_factory=dict)
    restart: tuple[int, int] | None = None  # checkpoint at, restored watches join at


def offline(text: str, events: list[dict[str, Any]], registered: int) -> list[dict[str, Any]]:
    """``run_offline`` with the first ``registered`` events as history."""
    now = _now(events, registered)
    return list(run_offline(parse_query(text), events, now=now))


def _now(events: list[dict[str, Any]], registered: int) -> dt.datetime:
    if registered < len(events):
        return parse_timestamp(events[registered]["time"], what="now")
    return parse_timestamp(Flow().time(len(events) + 1), what="now")


def hosted(
    events: list[dict[str, Any]],
    texts: list[str],
    plot: Plot,
    *,
    hub: WatchHub,
    check: Callable[[int, WatchHub], None] | None = None,
) -> tuple[dict[int, list[dict[str, Any]]], WatchHub]:
    """Each watch's notifications through the hub, with the plot's pauses, deletions and
    restart; the hub at the end. ``check`` is called with ``k`` and the hub once the
    watches have come and gone before event ``k`` (``k`` the number of events: at the
    end)."""
    typed = [event_from_dict(e) for e in events]
    subs = {
        i: Subscription(parse_query(t), now=_now(events, plot.registered[i]))
        for i, t in enumerate(texts)
    }
    got: dict[int, list[dict[str, Any]]] = {i: [] for i in subs}
    state = dict.fromkeys(subs, "waiting")  # waiting, hub, alone, gone
    rejoin = dict.fromkeys(subs, 0)  # an alone watch joins again from this index

    def take(i: int, outputs: list[Any]) -> None:
        got[i].extend(o.to_json() for o in outputs)

    for k in range(len(typed) + 1):
        if plot.restart is not None and plot.restart[0] == k:
            raws = {
                i: snapshot_dump(hub.subscription(i) if state[i] == "hub" else subs[i])
                for i in subs
            }
            at, shared = book_load(book_dump(hub.offers, k))
            assert at == k

            def offers(shared: Any = shared) -> Any:
                return shared  # one book for all the watches restored from it

            hub = WatchHub(hub.count, hub.optimizer, log_slack=hub.log_slack)
            for i, raw in raws.items():
                subs[i] = snapshot_load(raw, offers=offers)
                if state[i] == "hub":
                    state[i] = "alone"
                    rejoin[i] = plot.restart[1]
        for i, at in enumerate(plot.registered):
            if at == k:
                take(i, subs[i].history_done())
                state[i] = "alone"
        for i, at in plot.deleted.items():
            if at == k and state[i] != "gone":
                if state[i] == "hub":
                    hub.discard(i)
                state[i] = "gone"
        for i, windows in plot.paused.items():
            for start, end in windows:
                if start == k and state[i] == "hub":
                    subs[i] = hub.remove(i)
                    state[i] = "alone"
                    rejoin[i] = max(rejoin[i], end)
        for i in subs:
            if state[i] == "alone" and rejoin[i] <= k:
                hub.add(i, subs[i])
                state[i] = "hub"
        if check is not None:
            check(k, hub)
        if k == len(typed):
            break
        e = typed[k]
        for i, sub in subs.items():
            if state[i] == "waiting":
                take(i, sub.push(e, live=False))
            elif state[i] == "alone":
                take(i, sub.push(e, live=True))
        for i, output in hub.push(e):
            got[i].append(output.to_json())  # type: ignore[union-attr]  # a watch never ends
    return got, hub


def families_are_the_watches(_k: int, hub: WatchHub) -> None:
    """The hub keeps a family, and everything for it, exactly while it holds a watch of it:
    the book's family and its ways in (by literal subject, by pattern, by offer), its
    holders, and per consumer that holds one of its watches its place in the family's
    changes and its replica (both, or neither: they go together)."""
    producer, book = hub.producer, hub.producer.book
    watched = Counter(producer.watches.family.values())
    assert set(book.families) == set(watched)
    assert {n: sum(held.values()) for n, held in producer.holders.items()} == watched
    assert all(count > 0 for held in producer.holders.values() for count in held.values())
    ways = [f for same in book._literal.values() for f in same] + book._patterns
    assert sorted(map(id, ways)) == sorted(map(id, book.families.values()))
    assert all(same for same in book._literal.values())
    members: defaultdict[int, set[FamilyName]] = defaultdict(set)
    for name, family in book.families.items():
        for offer in family.entries:
            members[offer].add(name)
    assert book._member == members
    for number, consumer in enumerate(hub.consumers):
        held = {n: c[number] for n, c in producer.holders.items() if number in c}
        assert {n: consumer.watches.size(n) for n in consumer.watches.families()} == held
        assert set(consumer.replicas) == {n for c, n in producer.cursor if c == number}
        assert set(consumer.replicas) <= set(held)


@st.composite
def plots(draw, count: int, length: int) -> Plot:
    index = st.integers(0, length)
    plot = Plot([draw(index) for _ in range(count)])
    for i in range(count):
        action = draw(st.sampled_from(["none", "none", "pause", "delete"]))
        start = draw(st.integers(plot.registered[i], length))
        if action == "pause":  # out and back in, possibly at once (no event in between)
            plot.paused[i] = []
            for _ in range(draw(st.integers(1, 3))):
                end = draw(st.integers(start, length))
                plot.paused[i].append((start, end))
                start = draw(st.integers(end, length))
        elif action == "delete":
            plot.deleted[i] = start
    if draw(st.booleans()):
        at = draw(index)
        plot.restart = (at, draw(st.integers(at, length)))
    return plot


@settings(max_examples=200, deadline=None)
@given(
    flows(),
    st.lists(watches(), min_size=1, max_size=6),
    st.integers(1, 4),
    st.sampled_from(["auto", "rotating"]),
    st.integers(1, 6),
    st.data(),
)
def test_the_hub_notifies_each_watch_what_the_offline_contract_gives(
    flow, ws, consumers, optimizer, slack, draw
):
    events = flow.events
    texts = [w["text"] for w in ws]
    plot = draw.draw(plots(len(texts), len(events)))
    hub = WatchHub(consumers, Rotating() if optimizer == "rotating" else Optimizer(),
                   log_slack=slack)  # fmt: skip
    got, _ = hosted(events, texts, plot, hub=hub, check=families_are_the_watches)
    for i, text in enumerate(texts):
        expected = offline(text, events, plot.registered[i])
        if i in plot.deleted:  # what it was given before its deletion
            cut = plot.deleted[i]
            limit = events[cut]["seq"] if cut < len(events) else None
            expected = [
                line
                for line in expected
                if limit is None or line["seq"] is None or line["seq"] < limit
            ]
        assert got[i] == expected, (text, plot)


def test_the_open_offers_are_held_once_and_every_strategy_is_used():
    # Given SPEC 8.3's range-min example and three watches on it, in a hub whose optimizer
    # takes the strategies in turn
    flow = range_min_flow()
    for offer in (5, 6, 7):
        flow.post(offer, f"0.9{offer}", quantity_max=3000)
    events = flow.events
    texts = [RANGE_MIN_QUERY, RANGE_MIN_QUERY + " NOTIFY WHEN CHANGED BY 1%",
             "SELECT ask FROM offers WHERE offer = 1"]  # fmt: skip
    hub = WatchHub(2, Rotating())
    got, hub = hosted(events, texts, Plot([3, 0, 3]), hub=hub)
    # Then each watch is the offline contract's
    for i, text in enumerate(texts):
        assert got[i] == offline(text, events, [3, 0, 3][i])
    # and the open offers are the hub's alone: none of the watches keeps a copy
    assert sorted(hub.offers.offers) == [1, 2, 3, 5, 6, 7]
    for sub in hub.subs.values():
        assert isinstance(sub.engine, WatchEngine)
        assert sub.engine.shared and sub.engine.offers.offers == {}
    # and each change that reached a range watch was logged with its measured time
    choices = hub.take_choices()
    assert [c["choice"] for c in choices] == [STRATEGIES[i % 3] for i in range(len(choices))]
    # (watch 1 from the start: every change reached it)
    assert [c["seq"] for c in choices] == [e["seq"] for e in events]
    assert all(c["measured_seconds"] >= 0 for c in choices)
    assert hub.take_choices() == []


def test_a_snapshot_without_its_offers_is_stale_without_the_book():
    # Given a watch checkpointed in a hub (its offers left to the book)
    flow = range_min_flow()
    sub = Subscription(parse_query(RANGE_MIN_QUERY), now=_now(flow.events, 3))
    for raw in flow.events[:3]:
        sub.push(event_from_dict(raw), live=False)
    sub.history_done()
    hub = WatchHub()
    hub.add(7, sub)
    raw = snapshot_dump(hub.subscription(7))
    book = book_dump(hub.offers, 3)
    assert book.startswith(BOOK_MAGIC)
    # When it is loaded without the book, or with no book at its cursor, it is stale (the
    # engine rebuilds it by replay)
    for offers in (None, lambda: None):
        try:
            snapshot_load(raw, offers=offers)
        except SnapshotStale as stale:
            assert "shared open offers" in str(stale)
        else:
            raise AssertionError("loaded without its offers")
    # and with the book it is the watch it was, with the book's offers as its own
    loaded = snapshot_load(raw, offers=lambda: book_load(book)[1])
    engine = loaded.engine
    assert isinstance(engine, WatchEngine)
    assert engine.answer() == hub._last(7, engine.q)
    assert sorted(engine.offers.offers) == [1, 2, 3]


def test_a_paused_watch_comes_back_comparing_with_what_it_was_told():
    # Given offers 1 at 1.00 and 2 at 1.02, a watch told of moves over 5% and one of any
    pencils = "office.supplies.pencils"
    flow = Flow()
    flow.post(1, "1.00")
    flow.post(2, "1.02")
    flow.amend(1, "0.99")  # within 5% of 1.00: the first is not told
    flow.end(1)  # while the first is paused: offer 2 at 1.02, within 5% of 1.00
    flow.amend(2, "1.06")  # back in the hub: 6% over the 1.00 it was told
    texts = [f"SELECT MIN(ask) FROM offers WHERE subject = '{pencils}' NOTIFY WHEN CHANGED BY 5%",
             f"SELECT MIN(ask) FROM offers WHERE subject = '{pencils}'"]  # fmt: skip
    got, _ = hosted(flow.events, texts, Plot([2, 2], paused={0: [(3, 4)]}), hub=WatchHub())
    assert got[0] == offline(texts[0], flow.events, 2)
    assert got[1] == offline(texts[1], flow.events, 2)
    assert [line["data"]["value"] for line in got[0]] == ["1.00", "1.06"]
    assert [line["data"]["value"] for line in got[1]] == ["1.00", "0.99", "1.02", "1.06"]


def footprint(hub: WatchHub) -> dict[str, Any]:
    """What the hub keeps for its range watches' families, as plain values."""
    producer, book = hub.producer, hub.producer.book
    return {
        "families": {str(n): (len(f.entries), len(f.log)) for n, f in book.families.items()},
        "literal": {s: [str(f.name) for f in same] for s, same in book._literal.items()},
        "patterns": [str(f.name) for f in book._patterns],
        "members": {offer: sorted(map(str, names)) for offer, names in book._member.items()},
        "holders": {str(n): dict(held) for n, held in producer.holders.items()},
        "cursor": {(c, str(n)): at for (c, n), at in producer.cursor.items()},
        "home": dict(producer.home),
        "watched": sorted(map(str, producer.watches.families())),
        "consumers": [
            {
                "replicas": {str(n): len(f.log) for n, f in c.replicas.items()},
                "watched": sorted(map(str, c.watches.families())),
                "last": sorted(c.last),
                "thresholds": sorted(c.thresholds),
            }
            for c in hub.consumers
        ],
    }


CHURNED = 30  # families, two watches each


def churned(i: int, hi: int) -> str:
    """A watch of market ``office.m<i>``'s family (by pattern for odd ``i``, by subject for
    even ones), the cheapest with a largest lot of 2,000 to ``hi``."""
    test = f"MATCHES 'office.m{i}.*'" if i % 2 else f"= 'office.m{i}.pencils'"
    return (
        f"SELECT MIN(ask) FROM offers WHERE subject {test} AND quantity_max BETWEEN 2000 AND {hi}"
    )


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_families_of_removed_watches_go_with_all_that_was_kept_for_them(strategy):
    # Given SPEC 8.3's range-min example on pencils and an offer on each of 30 other markets
    flow = range_min_flow()
    for i in range(CHURNED):
        flow.post(100 + i, "1.00", f"office.m{i}.pencils", quantity_max=3000)
    join = len(flow.events)
    for i in range(CHURNED):  # changes that reach the 60 watches of those markets
        flow.amend(100 + i, "0.90", f"office.m{i}.pencils", quantity_max=4000)
    flow.amend(1, "0.96", quantity_min=1000, quantity_max=5000)  # and the pencils watch
    flow.post(5, "0.94", quantity_max=3000)
    first_out = len(flow.events)
    flow.amend(1, "0.98", quantity_min=1000, quantity_max=5000)
    last_out = len(flow.events)
    for i in range(CHURNED):  # changes that reach no watch
        flow.amend(100 + i, "0.80", f"office.m{i}.pencils", quantity_max=4000)
    flow.end(2)
    flow.amend(5, "0.93", quantity_max=3000)
    back = len(flow.events)
    flow.amend(101, "0.70", "office.m1.pencils", quantity_max=4000)
    flow.amend(3, "0.85", quantity_min=100, quantity_max=3000)
    events = flow.events
    # a hub that holds the pencils watch throughout, and from ``back`` on a watch of market
    # m1; and one that also holds two watches of each of the 30 markets' families from
    # ``join``, takes the first of each family out at ``first_out`` and the second at
    # ``last_out`` (by then every family but pencils' has been built, fed and relaxed)
    kept = [RANGE_MIN_QUERY, churned(1, 10000)]
    texts = [*kept, *(churned(j // 2, 5000 + j % 2) for j in range(2 * CHURNED))]
    plot = Plot([3, back, *[join] * 2 * CHURNED])
    plot.deleted = {2 + j: first_out if j % 2 == 0 else last_out for j in range(2 * CHURNED)}
    pencils = FamilyName.parse(f"MIN|ask|{PENCILS}|quantity_max")
    seen: dict[int, dict[str, Any]] = {}
    gone: list[weakref.ref[Any]] = []

    def look(k: int, hub: WatchHub) -> None:
        families_are_the_watches(k, hub)
        seen[k] = footprint(hub)
        if k == first_out - 1:  # every family of the markets is in the book, fed
            built = [f for n, f in hub.producer.book.families.items() if n != pencils]
            replicas = [f for c in hub.consumers for n, f in c.replicas.items() if n != pencils]
            gone.extend(weakref.ref(x) for x in [*built, *(f.pattern for f in built), *replicas])

    reference: dict[int, dict[str, Any]] = {}

    def look_alone(k: int, hub: WatchHub) -> None:
        reference[k] = footprint(hub)

    alone, _ = hosted(events, kept, Plot([3, back]), hub=WatchHub(2, Always(strategy=strategy)),
                      check=look_alone)  # fmt: skip
    got, _ = hosted(events, texts, plot, hub=WatchHub(2, Always(strategy=strategy)), check=look)
    # Then the 30 families were built, and relax gave a replica of each to each consumer
    # holding one of its watches
    replicas = {(consumer_of(2 + j, 2), j // 2) for j in range(2 * CHURNED)}
    assert len(gone) == 2 * CHURNED + (len(replicas) if strategy == "relax" else 0)
    # and once the first watches were out the families stayed, each held by one watch
    holders = seen[first_out]["holders"]
    assert len(holders) == CHURNED + 1
    assert [sum(held.values()) for held in holders.values()] == [1] * (CHURNED + 1)
    # and once the last ones were out, the hub keeps exactly what the hub that never had them
    # keeps: pencils' family, its holder, its offers, and under relax the consumer's replica
    # and its place in the family's changes
    assert seen[last_out] == reference[last_out]
    assert len(seen[last_out]["families"]) == 1 and seen[last_out]["patterns"] == []
    assert len(seen[last_out]["literal"]) == len(seen[last_out]["holders"]) == 1
    assert len(seen[last_out]["cursor"]) == (strategy == "relax")
    # and nothing refers to what was dropped any more: not the families, nor their compiled
    # patterns, nor the consumers' replicas
    gc.collect()
    assert [ref() for ref in gone] == [None] * len(gone)
    # and market m1's family, built again for a new watch, is the one the other hub builds
    # for it the first time, down to its list of changes and the relax replica's place in it
    assert seen[len(events)] == reference[len(events)]
    # and every watch is told what the offline contract gives, the two kept ones exactly what
    # the hub that never had the others told them
    assert got[0] == alone[0] == offline(RANGE_MIN_QUERY, events, 3)
    assert got[1] == alone[1] == offline(kept[1], events, back)
    assert [line["data"]["value"] for line in got[0]] == [
        "1.00", "0.97", "1.00", "0.96", "0.94", "0.93", "0.85"
    ]  # fmt: skip
    assert [line["data"]["value"] for line in got[1]] == ["0.80", "0.70"]
    for j in range(2 * CHURNED):
        cut = events[plot.deleted[2 + j]]["seq"]
        expected = offline(texts[2 + j], events, join)
        assert got[2 + j] == [line for line in expected if line["seq"] is None or line["seq"] < cut]
        assert [line["data"]["value"] for line in got[2 + j]] == ["1.00", "0.90"]


def _alone(members: list[Member], events: list[tuple[int | None, Any]], upto: int) -> None:
    """Each fed alone, every event it may see (as ``run_offline`` feeds one)."""
    for m in members:
        for owner, e in events:
            if e.seq > m.cursor and m.sees(owner):
                m.outputs.extend(m.sub.push(e, live=e.seq > m.seam))
        if upto >= m.seam:
            m.outputs.extend(m.sub.history_done())
        m.cursor = upto


@settings(max_examples=200, deadline=None)
@given(flows(), st.lists(watches(), min_size=1, max_size=6), st.data())
def test_watches_catching_up_together_over_one_book_get_what_each_alone_gets(flow, ws, draw):
    """The subscription engine's watch joiners (``advance_watches``): at any cursors and
    seams, fed the log in slices of any length, with private events of their owners among
    the public ones, each gets what feeding it alone gives, and all of them hold one book."""
    length = len(flow.events)
    # the trades of the flow private to one owner or another, say (offer events are public,
    # SPEC 5.6)
    owners = [
        draw.draw(st.sampled_from([None, 1, 2])) if e["type"] == "trade" else None
        for e in flow.events
    ]
    typed = [(o, event_from_dict(e)) for o, e in zip(owners, flow.events, strict=True)]
    pairs: list[tuple[Member, Member]] = []
    for w in ws:
        seam = draw.draw(st.integers(0, length))
        cursor = draw.draw(st.integers(0, length))
        viewer, sees_all = draw.draw(st.sampled_from([1, 2])), draw.draw(st.booleans())
        m, ref = (
            Member(len(pairs), Subscription(parse_query(w["text"]), now=_now(flow.events, seam)),
                   0, seam, viewer, sees_all)
            for _ in range(2)
        )  # fmt: skip
        # where it was restored, say (a watch of one subject fed alone once live keeps
        # only that subject's offers: the engine's never are, ``engine._restored``)
        advance_watches([m], typed[:cursor], upto=cursor)
        m.cursor = cursor
        _alone([ref], typed[:cursor], cursor)
        pairs.append((m, ref))
    cuts = sorted(draw.draw(st.lists(st.integers(0, length), max_size=4)))
    for high in [*cuts, length]:
        group = [(m, ref) for m, ref in pairs if m.cursor < high]
        if not group:
            continue
        low = min(m.cursor for m, _ in group)
        stretch = typed[low:high]
        advance_watches([m for m, _ in group], stretch, upto=high)
        _alone([ref for _, ref in group], stretch, high)
        for m, _ in group:
            m.cursor = high
        books = {id(m.sub.engine.offers) for m, _ in group}  # type: ignore[union-attr]  # watches
        assert len(books) == 1
        for m, ref in pairs:
            engine, alone = m.sub.engine, ref.sub.engine
            assert isinstance(engine, WatchEngine) and isinstance(alone, WatchEngine)
            assert [o.to_json() for o in m.outputs] == [o.to_json() for o in ref.outputs]
            assert (m.sub.n, m.sub.live) == (ref.sub.n, ref.sub.live)
            if not ref.sub.live:  # (what its registration's notification will carry)
                assert engine.last_seq == alone.last_seq
            assert engine.answer() == alone.answer()


def test_a_watch_fed_only_its_subjects_events_is_no_book_for_the_others():
    # Given a watch of one subject that a SubscriptionSet pushes only that subject's events
    # once it is live, and the same watch fed every event alone
    flow = range_min_flow()
    flow.post(9, "0.50", "office.supplies.pens", quantity_max=3000)
    text = "SELECT MIN(ask) FROM offers WHERE subject MATCHES 'office.supplies.pencils'"
    in_set, alone = (Subscription(parse_query(text), now=_now(flow.events, 0)) for _ in range(2))
    subs = SubscriptionSet()
    subs.add(1, in_set)
    for raw in flow.events:
        subs.push(event_from_dict(raw))
        alone.push(event_from_dict(raw), live=True)
    # Then both answer alike, but the set's lacks the other subject's offer: it is not
    # whole, nor is its snapshot, which the engine rebuilds rather than lend its offers on
    assert in_set.engine.answer() == alone.engine.answer()  # type: ignore[union-attr]  # watches
    assert 9 not in in_set.engine.offers.offers and 9 in alone.engine.offers.offers  # type: ignore[union-attr]  # watches
    loaded = [snapshot_load(snapshot_dump(sub)).engine for sub in (in_set, alone)]
    assert [isinstance(e, WatchEngine) and e.whole for e in loaded] == [False, True]
