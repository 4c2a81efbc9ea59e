"""Many subscriptions at once (``matching.subscriptions.run.multi``): the same outputs as each
subscription run on its own through ``Subscription``, and the work per event shown by its
counts."""

from __future__ import annotations

import datetime as dt
import functools
import string
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matching import Interval
from matching.subjects import compile_pattern
from matching.subscriptions import PatternQuery, Subscription, event_from_dict, parse_query
from matching.subscriptions.run.limits import OUTPUT_LIMIT, Limits
from matching.subscriptions.run.multi import StaticSplit, SubscriptionSet, split_filter

BASE = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
SUBJECTS = ["office.supplies.pencils", "office.supplies.pens", "garden.tools.rakes"]
PRICES = ["0.90", "1.00", "1.05", "1.10", "1.20"]
ORDERS = ["<", "<=", ">", ">="]


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _filter(text: str) -> Any:
    query = parse_query(f"SELECT a.seq FROM FILTER{{{text}}}(EVENTS) AS a")
    return query.sides[0].first.filter  # type: ignore[union-attr]  # a FILTER side's first step has its filter


def _eq(v: Any) -> Interval:
    return Interval(v, True, v, True)


# -- which FILTER conjuncts go into the index ---------------------------------------------


def test_literal_tests_and_a_subject_go_into_the_tree() -> None:
    split = split_filter(
        _filter(
            "type = 'trade' AND subject = 'office.supplies.pencils' AND price > 1.05 AND 7 >= offer"
        )  # fmt: skip
    )
    assert split == StaticSplit(
        compile_pattern("office.supplies.pencils"),
        (
            ("type", _eq("trade")),
            ("price", Interval(Decimal("1.05"), False, None, False)),
            ("offer", Interval(None, False, Decimal(7), True)),
        ),
        True,
    )
    assert split_filter(None) == StaticSplit(None, (), True)
    # a second test on an attribute is met with the first: one range
    assert split_filter(_filter("price > 1 AND price < 2")) == StaticSplit(
        None, (("price", Interval(Decimal(1), False, Decimal(2), False)),), True
    )
    matches = split_filter(_filter("subject MATCHES 'office.>' AND price <= 1"))
    assert matches == StaticSplit(
        compile_pattern("office.>"), (("price", Interval(None, False, Decimal(1), True)),), True
    )


@pytest.mark.parametrize(
    "text, tests",
    [
        ("type = 'trade' AND price != 1", (("type", _eq("trade")),)),
        ("type = 'trade' OR price > 1", ()),
        # two ranges with nothing between them: the first in the tree
        ("price > 2 AND price < 1", (("price", Interval(Decimal(2), False, None, False)),)),
        ("price > 1 + 1", ()),
        ("NOT subject MATCHES 'office.>'", ()),
        ("subject = 'a.*'", (("subject", _eq("a.*")),)),  # a string, not a pattern
    ],
)
def test_what_the_tree_cannot_hold_leaves_the_filter_to_be_checked(
    text: str, tests: tuple[Any, ...]
) -> None:
    split = split_filter(_filter(text))
    assert (split.subject, split.tests, split.exact) == (None, tests, text == "subject = 'a.*'")


# -- the same outputs as every subscription on its own -------------------------------------

FORM1 = [
    "SELECT price WHERE type = 'trade', price > {p}",
    "SELECT * WHERE subject MATCHES 'office.>', price <= {p}",
    "SELECT price WHERE (price < {p} OR type = 'best_offer'), subject != 'garden.tools.rakes'",
    "SELECT price WHERE type = 'trade', price != {p}, end_time = NOW + {m}m",
    "SELECT price WHERE type = 'trade', start_time = NOW + {m}m",
    "SELECT AVG(price, 2) WHERE type = 'trade' GROUP BY subject",
    "SELECT price WHERE type = 'trade' HAVING MAX(price, 2) > {p}",
    "SELECT offer WHERE type = 'best_offer', offer = {o}, end_time = NOW",
    "SELECT price WHERE start_time = NOW - 1h, end_time = NOW + {m}m, price = *",
]
T = "FILTER{{type = 'trade'}}(EVENTS)"
FORM3 = [
    "SELECT a.price, b.price FROM FILTER{{type = 'trade' AND price > {p}}}(EVENTS) AS a "
    "NEXT{{b.subject = a.subject AND b.price < {p}}} " + T + " AS b",
    "SELECT a.price, b.price FROM FILTER{{type = 'trade' AND subject = '{s}'}}(EVENTS) AS a "
    "NEXT{{b.subject = a.subject AND b.price > 1.05 * a.price}} "
    "FILTER{{type = 'trade' AND subject = '{s}'}}(EVENTS) AS b",
    "SELECT a.price, b.price, n, DUR FROM " + T + " AS a "
    "FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} " + T + " AS b "
    "WHERE DUR >= {d}m",
    "SELECT a.offer, b.value, n FROM FILTER{{type = 'best_offer' AND offer = {o}}}(EVENTS) AS a "
    "FOLD{{b.offer = a.offer, b.value < b.last.value, COUNT AS n}} "
    "FILTER{{type = 'best_offer'}}(EVENTS) AS b WHERE n >= {n}{within}",
    "SELECT a.price, b.price FROM " + T + " AS a NEXT{{b.subject = a.subject AND "
    "b.price > 1.05 * a.price}} " + T + " AS b WHERE b.price - a.price >= {q} WITHIN {m}m",
    # WHEREs comparing one expression with a literal, read together by bisection
    "SELECT a.price, b.price, n, DUR FROM " + T + " AS a "
    "FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} " + T + " AS b "
    "WHERE DUR {op} {d}m",
    "SELECT b.price, n FROM " + T + " AS a FOLD{{b.subject = a.subject, b.price < b.last.price,"
    " COUNT AS n}} " + T + " AS b WHERE {n} {op} n WITHIN {m}m",
    "SELECT a.seq, b.seq FROM FILTER{{type != 'trade' OR price >= {p}}}(EVENTS) AS a "
    "NEXT{{b.offer = a.offer}} EVENTS AS b "
    "UNION SELECT a.seq, b.seq FROM EVENTS AS a "
    "NEXT{{b.subject = a.subject}} FILTER{{subject MATCHES 'office.>'}}(EVENTS) AS b WITHIN {m}m",
]
# "a trade, then the next one p% higher" and kin: groups of these that differ only in the
# factor {k}, WITHIN, WHERE and SELECT run on one record per start (patterns_thresholds.py);
# the factors tie, cross zero and flip the order of the thresholds (a.price - 1.00 < 0)
THRESHOLDS = [
    "SELECT a.price, b.price FROM FILTER{{type = 'trade' AND subject = '{s}'}}(EVENTS) AS a "
    "NEXT{{b.subject = a.subject AND b.price > {k} * a.price}} "
    "FILTER{{type = 'trade' AND subject = '{s}'}}(EVENTS) AS b{within}",
    "SELECT a.seq, b.seq FROM " + T + " AS a NEXT{{a.price * {k} <= b.price}} " + T + " AS b"
    "{within}",
    "SELECT a.price, b.price, DUR FROM " + T + " AS a "
    "NEXT{{b.subject = a.subject AND b.price < {k} + a.price}} EVENTS AS b{within}",
    "SELECT a.price, b.seq FROM " + T + " AS a NEXT{{{k} * (a.price - 1.00) <= b.price AND "
    "b.offer = a.offer}} " + T + " AS b WHERE b.price - a.price >= {q}{within}",
    "SELECT b.price, end FROM " + T + " AS a NEXT{{b.price > a.price - {k} AND "
    "b.subject != a.subject}} " + T + " AS b{within}",
    "SELECT a.price FROM " + T + " AS a NEXT{{b.price >= {k} - a.price}} " + T + " AS b{within}",
]
FACTORS = ["-1", "-0.5", "0", "0.5", "1", "1.05", "1.050", "1.1", "2"]
# "a trade above x, then the next one below y" and kin: groups of these that differ only in
# the literals {x} and {y}, WITHIN, WHERE and SELECT run on one record per start
# (patterns_bounds.py); the literals tie with each other and with the events' values, and
# the orders {c} and {r} are drawn for each group
BOUNDS = [
    "SELECT a.price, b.price FROM FILTER{{type = 'trade' AND subject = '{s}' AND price {c} {x}}}"
    "(EVENTS) AS a NEXT{{b.subject = a.subject AND b.price {r} {y}}} "
    "FILTER{{type = 'trade' AND subject = '{s}'}}(EVENTS) AS b{within}",
    "SELECT a.seq, b.seq, DUR FROM FILTER{{{x} {c} price}}(EVENTS) AS a "
    "NEXT{{{y} {r} b.value}} EVENTS AS b{within}",
    "SELECT a.price, b.value FROM FILTER{{price {c} {x} AND type = 'trade'}}(EVENTS) AS a "
    "NEXT{{b.offer = a.offer AND b.value {r} {y}}} FILTER{{type = 'best_offer'}}(EVENTS) AS b "
    "WHERE b.value - a.price >= {q}{within}",
    "SELECT b.price, end FROM FILTER{{type = 'trade' AND price {c} {x}}}(EVENTS) AS a "
    "NEXT{{b.price {r} {y} AND b.subject != a.subject}} " + T + " AS b{within}",
]
FORM2 = [
    "SELECT b.offer FROM a AND b WHERE a.type = 'trade', a.price >= {p}, "
    "b.type = 'best_offer', b.subject = a.subject",
]
QUERIES = FORM1 + FORM3 + THRESHOLDS + THRESHOLDS + BOUNDS + FORM2


# The strategies drawn from, built once: a strategy built inside a draw is built and
# validated again at every draw (most of these examples' time went there), and the
# choices each one makes are the same either way.
MINUTES = st.integers(0, 6)
SUBJECT = st.sampled_from(SUBJECTS)
KIND = st.integers(0, 5)
OFFER = st.integers(1, 3)
PRICE = st.sampled_from(PRICES)
ORDER = st.sampled_from(ORDERS)
STREAM_LENGTH = st.integers(1, 24)
ADDS = st.integers(0, 3)
REMOVE = st.integers(0, 4)
WINDOW = st.integers(0, 20)
WITHIN = st.none() | WINDOW
LITERAL = {
    "p": PRICE,
    "m": WINDOW,
    "o": OFFER,
    "s": SUBJECT,
    "c": ORDER,
    "r": ORDER,
    "d": WINDOW,
    "n": OFFER,
    "q": st.sampled_from(["0", "0.05", "0.1"]),
    "k": st.sampled_from(FACTORS),
    "x": PRICE,
    "y": PRICE,
    "op": st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
}
# a run's parameters, drawn once for the run; the others once for each of its queries
RUN_FIELDS = ("p", "m", "o", "s", "c", "r")
QUERY_FIELDS = ("d", "n", "q", "k", "x", "y", "op")
STATE_LIMIT = st.sampled_from([2, 5, 100_000])
OUTPUTS_LIMIT = st.sampled_from([1, 2, OUTPUT_LIMIT])


def template_fields(template: str) -> frozenset[str]:
    """The names of the fields of ``template`` (``{p}``, ``{within}``...)."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(template) if name)


@st.composite
def events(draw: st.DrawFn, n: int) -> list[dict[str, Any]]:
    out = []
    t = BASE
    for seq in range(1, n + 1):
        t += dt.timedelta(minutes=draw(MINUTES))
        e: dict[str, Any] = {"seq": seq, "time": _stamp(t), "subject": draw(SUBJECT)}
        kind = draw(KIND)
        if kind <= 2:
            e.update(type="trade", offer=draw(OFFER), trade=seq, quantity=1, price=draw(PRICE))
        elif kind <= 4:
            e.update(type="best_offer", offer=draw(OFFER), matching_bids=1)
            if kind == 3:
                e["value"] = draw(PRICE)
        else:
            e.update(type="offer_posted", offer=seq, version=1, ask="1.00", constraint="")
        out.append(e)
    return out


@st.composite
def scripts(
    draw: st.DrawFn, queries: list[str] = QUERIES, sizes: tuple[int, ...] = (1, 1, 2, 3, 5)
) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """Events, and what happens before each: ``("add", id, query, history, limit,
    outputs)`` (its state and outputs limits) or
    ``("remove", id)``, the queries from the templates ``queries``, added in runs of one of
    ``sizes`` that differ only in their ``WHERE`` or threshold parameters. Only the
    parameters a template has are drawn (the others would change nothing)."""
    template_of = st.sampled_from(queries)
    size_of = st.sampled_from(sizes)
    fields = {template: template_fields(template) for template in queries}
    stream = draw(events(draw(STREAM_LENGTH)))
    steps: list[tuple[Any, ...]] = []
    held: list[int] = []
    next_id = 0
    for _ in stream:
        for _ in range(draw(ADDS)):
            if held and draw(REMOVE) == 0:
                steps.append(("remove", held.pop(draw(st.integers(0, len(held) - 1)))))
                continue
            template = draw(template_of)
            used = fields[template]
            params = {name: draw(LITERAL[name]) for name in RUN_FIELDS if name in used}
            # some patterns come in groups that differ only in WHERE (d, n, q) and WITHIN
            # (within), which the set runs by one shared automaton, or in a factor and
            # WITHIN (k, within), which it runs as one threshold group
            for _ in range(draw(size_of)):
                own = {name: draw(LITERAL[name]) for name in QUERY_FIELDS if name in used}
                if "within" in used:
                    within = draw(WITHIN)
                    own["within"] = "" if within is None else f" WITHIN {within}m"
                query = template.format(**params, **own)
                steps.append(("add", next_id, query, draw(st.booleans()), draw(STATE_LIMIT),
                              draw(OUTPUTS_LIMIT)))  # fmt: skip
                held.append(next_id)
                next_id += 1
        steps.append(("event",))
    return stream, steps


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts(), st.booleans())
def test_the_set_gives_what_each_subscription_gives_on_its_own(
    script: tuple[list[dict[str, Any]], list[tuple[Any, ...]]], share: bool
) -> None:
    _same_as_alone(script, share)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts(THRESHOLDS))
def test_threshold_groups_give_what_each_pattern_gives_on_its_own(
    script: tuple[list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    _same_as_alone(script, True)


# Runs of many patterns that one shared automaton or threshold group runs together, so
# that one event completes instances for many of them at once and the set hands them their
# outputs together (multi.py's ``give`` and ``deliver``), some with a state_limit the event
# exceeds or fewer outputs allowed than it completes
BULK = [FORM3[2], FORM3[5], FORM3[6], FORM3[3], THRESHOLDS[0], THRESHOLDS[1], THRESHOLDS[3],
        BOUNDS[0], BOUNDS[1]]  # fmt: skip


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts(BULK, sizes=(4, 8, 12)))
def test_outputs_handed_out_in_bulk_are_what_each_pattern_gives_on_its_own(
    script: tuple[list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    _same_as_alone(script, True)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts(BOUNDS, sizes=(1, 2, 4, 8)))
def test_bound_groups_give_what_each_pattern_gives_on_its_own(
    script: tuple[list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    _same_as_alone(script, True)


# Each text parsed once for the module: hypothesis draws the same few templates and
# parameters again and again, and parsing them anew was a fifth of each example's time. A
# parsed query is frozen (``language/model.py``, ``patterns/model.py``), and
# ``_same_as_alone`` already gives one parse to both the set's subscription and the one
# alone.
parsed = functools.lru_cache(maxsize=None)(parse_query)


def _same_as_alone(script: tuple[list[dict[str, Any]], list[tuple[Any, ...]]], share: bool) -> None:
    """Run the script through one set and each subscription alone: the same outputs."""
    stream, steps = script
    multi = SubscriptionSet(share=share)
    alone: dict[int, Subscription] = {}
    # taken out of the set: each goes on alone from where the set left it
    left: dict[int, Subscription] = {}
    expected: dict[int, list[Any]] = {}
    got: dict[int, list[Any]] = {}
    position = 0
    for step in steps:
        if step[0] == "add":
            _, sub_id, text, with_history, limit, outputs = step
            now = event_from_dict(stream[position]).time if position < len(stream) else BASE
            query = parsed(text)
            limits = Limits(state=limit, outputs=outputs)
            pair = [Subscription(query, now=now, limits=limits) for _ in range(2)]
            if with_history:  # the events so far as history, then the history is over
                for sub in pair:
                    for raw in stream[:position]:
                        sub.push(raw, live=False)
                    sub.history_done()
                if pair[0].finished:
                    continue
            multi.add(sub_id, pair[0])
            alone[sub_id] = pair[1]
            expected[sub_id], got[sub_id] = [], []
        elif step[0] == "remove":
            if step[1] in multi:
                left[step[1]] = multi.remove(step[1])
        else:
            raw = stream[position]
            position += 1
            for sub_id, sub in alone.items():
                expected[sub_id].extend(sub.push(raw, live=True))
            for sub_id, sub in left.items():
                got[sub_id].extend(sub.push(raw, live=True))
            for sub_id, output in multi.push(raw):
                got[sub_id].append(output)
            # a subscription that completed or was suspended has left the set
            assert all((i in multi) == (not s.finished) for i, s in alone.items() if i not in left)
    assert got == expected
    # no subject is kept that no watch of the set follows (each one ever watched was)
    assert all(multi._watching.values())
    # the set holds the subscriptions' instances, and those WITHIN has dropped on their own
    # until the pattern's next evaluated event (expiry is lazy)
    assert multi.instances >= sum(
        s.engine.kept_events
        for i, s in alone.items()
        if i in multi and isinstance(s.query, PatternQuery)
    )
    # and one asked for while in the set holds them too (lazily expired alike)
    for i in alone:
        if i in multi and isinstance(alone[i].query, PatternQuery):
            assert multi.subscription(i).engine.kept_events >= alone[i].engine.kept_events


def test_adding_an_id_twice_or_a_finished_subscription_changes_nothing() -> None:
    multi = SubscriptionSet()
    query = parse_query("SELECT price WHERE type = 'trade'")
    multi.add(1, Subscription(query, now=BASE))
    with pytest.raises(ValueError, match="subscription 1 is already in the set"):
        multi.add(1, Subscription(query, now=BASE))
    done = Subscription(parse_query("SELECT price WHERE end_time = NOW"), now=BASE)
    done.history_done()
    with pytest.raises(ValueError, match="subscription 2 has finished"):
        multi.add(2, done)
    with pytest.raises(KeyError):
        multi.remove(3)
    assert (
        len(multi) == 1 and len(multi.index) == 0
    )  # the fresh one is indexed after its first event


# -- the work per event --------------------------------------------------------------------

MARKETS = [f"s.c.m{i}" for i in range(100)]
FELL = (
    "SELECT a.offer, b.value, n FROM FILTER{{type = 'best_offer' AND subject = '{m}'}}(EVENTS) "
    "AS a FOLD{{b.offer = a.offer, b.value < b.last.value, COUNT AS n}} "
    "FILTER{{type = 'best_offer' AND subject = '{m}'}}(EVENTS) AS b WHERE n = 3 WITHIN {w}m"
)


def _best(seq: int, market: str, offer: int, value: str) -> dict[str, Any]:
    return {"seq": seq, "time": _stamp(BASE + dt.timedelta(seconds=seq)), "type": "best_offer",
            "subject": market, "offer": offer, "value": value, "matching_bids": 1}  # fmt: skip


def test_an_event_visits_its_market_s_sources_and_touches_its_offer_s_instances() -> None:
    # Given 1,000 patterns ("the best value of an offer fell three times within w minutes"),
    # ten on each of 100 markets, each run by its own automaton (patterns that differ only
    # in WITHIN share one by default: the next test), and one best_offer event for each of
    # 5 offers per market
    multi = SubscriptionSet(share=False)
    for k, market in enumerate(MARKETS):
        for j in range(10):
            query = parse_query(FELL.format(m=market, w=10 + j))
            multi.add(10 * k + j, Subscription(query, now=BASE))
    seq = 0
    for offer in range(1, 6):
        for market in MARKETS:
            seq += 1
            assert multi.push(_best(seq, market, offer, "2.00")) == []
    # each pattern holds one instance per offer, waiting in the bucket of its offer
    assert multi.instances == 5_000
    assert len(multi.index) == 2_000  # every pattern's two sources: its FOLD step is active
    # When offer 3's best value on market m7 falls
    assert multi.push(_best(seq + 1, "s.c.m7", 3, "1.90")) == []
    # Then the event passes the two sources of m7's ten patterns, is evaluated by those ten,
    # and touches one instance in each: the one of offer 3 (not the 50 on m7, nor the 5,000)
    last = multi.last
    assert (last.sources, last.evaluated, last.instances) == (20, 10, 10)
    assert multi.instances == 5_010  # each of the ten started an instance for the new value
    # and an event no pattern follows passes nothing and evaluates nothing
    trade = {**_best(seq + 2, "s.c.m7", 3, "1.00"), "type": "trade", "price": "1.00"}
    multi.push(trade)
    assert (multi.last.sources, multi.last.evaluated, multi.last.instances) == (0, 0, 0)


def _live_pairs(
    text: str, windows: Iterable[int]
) -> tuple[SubscriptionSet, dict[int, Subscription]]:
    """``text`` on s.c.m0 for each window ``w`` (its id), registered live in a set and
    alone: the set, and the ones alone."""
    multi = SubscriptionSet()
    alone = {}
    for w in windows:
        query = parse_query(text.format(m="s.c.m0", w=w))
        pair = [Subscription(query, now=BASE) for _ in range(2)]
        for sub in pair:
            sub.history_done()
        multi.add(w, pair[0])
        alone[w] = pair[1]
    return multi, alone


def _falling(k: int) -> dict[str, Any]:
    """The ``k``th event of offer 1's best value falling 0.10 every 40 seconds from 2.00."""
    return {**_best(k, "s.c.m0", 1, f"{2.1 - k / 10:.2f}"),
            "time": _stamp(BASE + dt.timedelta(seconds=40 * k))}  # fmt: skip


def test_patterns_that_differ_only_in_within_share_one_automaton() -> None:
    # Given "the best value of offer 1 fell three times within w minutes" on s.c.m0 for
    # w = 1 to 10, registered live in the set and each alone
    multi, alone = _live_pairs(FELL, range(1, 11))
    # then the index holds the first source of one automaton, not of ten
    assert len(multi.index) == 1
    # When offer 1's best value falls every 40 seconds: 2.00, 1.90, ... 1.60
    for k in range(1, 6):
        e = _falling(k)
        got = multi.push(e)
        # Then each pattern gets what it gets alone, in the same order
        assert got == [(w, o) for w, sub in alone.items() for o in sub.push(e, live=True)]
        # the one automaton (the longest window, 10 minutes) offered the event the k - 1
        # instances started before it, through its two sources once the first is held
        assert (multi.last.sources, multi.last.instances) == (min(k, 2), k - 1)
    # the fourth event completed the instance of the first (three falls in 120 s) and the
    # fifth that of the second, each for the patterns whose window holds 120 s: w >= 2
    assert [w for w, _ in got] == list(range(2, 11))
    assert multi.last.evaluated == 1 + 9
    # each pattern holds the shared instances its own window keeps at 200 s: those started
    # at or after 200 s - w (w = 1: the events at 160 and 200 s; w = 2: 80 s on)
    assert multi.instances == 2 + 4 + 8 * 5 == sum(s.engine.kept_events for s in alone.values())
    # When one with a window shorter than the automaton's is taken out, it goes on alone
    # with its own instances, and completes the third event's instance at 240 s
    left = multi.remove(2)
    assert left.engine.kept_events == alone[2].engine.kept_events == 4
    e = _falling(6)
    assert left.push(e, live=True) == alone[2].push(e, live=True) != []
    assert left.engine.kept_events == alone[2].engine.kept_events == 4
    assert multi.push(e) == [
        (w, o) for w in (1, *range(3, 11)) for o in alone[w].push(e, live=True)
    ]


def test_a_where_that_raises_on_an_instance_out_of_a_member_s_window_does_not_fail_it() -> None:
    # Given two patterns that differ only in WITHIN, whose WHERE overflows the decimal
    # context once DUR reaches 100 s, in the set (one shared automaton) and each alone
    multi, alone = _live_pairs(FELL.replace("WHERE n = 3", "WHERE DUR * 1E999998 > 1"), (1, 10))
    got = []
    for k in range(1, 4):
        e = _falling(k)
        got.append(multi.push(e))
        for w in (1, 10):
            assert [o for i, o in got[-1] if i == w] == alone[w].push(e, live=True)
    assert [sorted({i for i, _ in out}) for out in got] == [[], [1, 10], [1, 10]]
    # When the fourth event completes the first event's instance, 120 s old
    e = _falling(4)
    out = multi.push(e)
    # Then the pattern whose window holds it fails, as it does alone; the other one, which
    # alone dropped that instance at 100 s, gets the instance of the third event
    assert [(i, type(o).__name__) for i, o in out] == [(1, "Notification"), (10, "Failed")]
    assert [o for _, o in out[:1]] == alone[1].push(e, live=True)
    with pytest.raises(ArithmeticError):
        alone[10].push(e, live=True)
    assert 1 in multi and 10 not in multi


def test_a_step_s_literal_bound_keeps_the_pattern_from_events_beyond_it() -> None:
    # Given "a trade above 1.00, then a later trade on the market below 0.95" on one market,
    # with three instances waiting (three trades above 1.00)
    multi = SubscriptionSet()
    query = parse_query(
        "SELECT a.seq, b.seq FROM FILTER{type = 'trade' AND subject = 'x.y' AND price > 1}"
        "(EVENTS) AS a NEXT{b.subject = a.subject AND b.price < 0.95} "
        "FILTER{type = 'trade' AND subject = 'x.y'}(EVENTS) AS b"
    )
    multi.add("p", Subscription(query, now=BASE))

    def sale(seq: int, price: str) -> dict[str, Any]:
        return {"seq": seq, "time": _stamp(BASE + dt.timedelta(seconds=seq)), "type": "trade",
                "subject": "x.y", "offer": 1, "trade": seq, "price": price, "quantity": 1}  # fmt: skip

    for seq in (1, 2, 3):
        assert multi.push(sale(seq, "1.05")) == []
    assert multi.instances == 3
    # When trades at 1.00 and at 0.95 come (neither above 1.00 nor below 0.95)
    for seq, price in ((4, "1.00"), (5, "0.95")):
        assert multi.push(sale(seq, price)) == []
        # Then the index passes neither of the pattern's sources: it is not even evaluated
        assert (multi.last.sources, multi.last.evaluated, multi.last.instances) == (0, 0, 0)
    assert multi.instances == 3
    # and one at 0.94 passes the step's source and completes the three instances
    out = multi.push(sale(6, "0.94"))
    assert [(i, o.data) for i, o in out] == [("p", {"a.seq": s, "b.seq": 6}) for s in (1, 2, 3)]
    assert (multi.last.sources, multi.last.evaluated, multi.last.instances) == (1, 1, 3)
    assert multi.instances == 0


def test_a_step_whose_instances_share_one_key_is_indexed_by_it() -> None:
    # Given ten patterns on one market, one per offer ("the best value of offer j fell"),
    # each with its instance waiting in the bucket of its own offer
    multi = SubscriptionSet()
    one = FELL.replace("AND subject = '{m}'}}(EVENTS) AS a", "AND offer = {o}}}(EVENTS) AS a")
    for j in range(1, 11):
        multi.add(j, Subscription(parse_query(one.format(m="s.c.m0", o=j, w=10)), now=BASE))
    for j in range(1, 11):
        assert multi.push(_best(j, "s.c.m0", j, "2.00")) == []
    assert multi.instances == 10
    # When offer 3's value falls
    assert multi.push(_best(11, "s.c.m0", 3, "1.90")) == []
    # Then only offer 3's pattern is evaluated: the first source and the FOLD step of its own
    # (whose one key, offer 3, the index tests), not the steps of the other nine
    assert (multi.last.sources, multi.last.evaluated, multi.last.instances) == (2, 1, 1)
    assert multi.instances == 11
    # and an offer no instance waits on evaluates nothing
    assert multi.push(_best(12, "s.c.m0", 11, "1.00")) == []
    assert (multi.last.sources, multi.last.evaluated, multi.last.instances) == (0, 0, 0)


RISING = (
    "SELECT a.price, b.price, n, DUR FROM FILTER{{type = 'trade' AND subject = 'x.y'}}(EVENTS) "
    "AS a FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} "
    "FILTER{{type = 'trade' AND subject = 'x.y'}}(EVENTS) AS b WHERE DUR >= {d}m"
)


def _trade(seq: int, price: str) -> dict[str, Any]:
    """A trade on x.y, ``seq`` minutes after BASE."""
    return {"seq": seq, "time": _stamp(BASE + dt.timedelta(minutes=seq)), "type": "trade",
            "subject": "x.y", "offer": 1, "trade": seq, "price": price, "quantity": 1}  # fmt: skip


def test_patterns_that_differ_only_in_where_share_one_automaton() -> None:
    # Given "prices rising for at least d minutes" on x.y for d = 1 to 20, in the set and
    # each alone, and a first event that starts nothing (so each joins holding no instance)
    multi = SubscriptionSet()
    alone = {}
    for d in range(1, 21):
        query = parse_query(RISING.format(d=d))
        multi.add(d, Subscription(query, now=BASE))
        alone[d] = Subscription(query, now=BASE)
    first = _best(1, "x.y", 1, "1.00")
    assert multi.push(first) == []
    assert all(sub.push(first, live=True) == [] for sub in alone.values())
    # then the index holds the first source of one automaton, not of twenty
    assert len(multi.index) == 1
    for k in range(2, 9):
        # When prices rise trade after trade, a minute apart
        trade = _trade(k, f"1.{k:02}")
        got = multi.push(trade)
        # Then each pattern gets what it gets alone, in the same order
        assert got == [(d, o) for d, sub in alone.items() for o in sub.push(trade, live=True)]
        # the one automaton offered the trade its k - 2 instances (one per earlier trade),
        # and only the patterns whose d the longest rise (k - 2 minutes) meets were pushed
        met = [d for d in alone if d <= k - 2]
        assert {d for d, _ in got} == set(met)
        # the patterns' outputs of one instance share its data, built once (never changed
        # by a consumer): as many data objects as distinct data
        assert len({id(o.data) for _, o in got}) == len({repr(o.data) for _, o in got})  # type: ignore[union-attr]  # no failure here: every item is an Output
        assert (multi.last.instances, multi.last.evaluated) == (k - 2, 1 + len(met))
        assert multi.instances == 20 * (k - 1)
    # When one is taken out, it goes on alone with the instances it had in the set
    left = multi.remove(20)
    assert left.engine.kept_events == alone[20].engine.kept_events == 7
    for seq, price in ((9, "1.20"), (10, "1.10")):
        assert left.push(_trade(seq, price), live=True) == alone[20].push(
            _trade(seq, price), live=True
        )
    assert left.engine.kept_events == alone[20].engine.kept_events == 1


HIGHER = (
    "SELECT a.price, b.price FROM FILTER{{type = 'trade' AND subject = 'x.y'}}(EVENTS) AS a "
    "NEXT{{b.subject = a.subject AND b.price > {k} * a.price}} "
    "FILTER{{type = 'trade' AND subject = 'x.y'}}(EVENTS) AS b WITHIN {w}m"
)


def test_patterns_that_differ_in_a_factor_and_within_share_one_record_per_trade() -> None:
    # Given "a trade, then the next one more than p% higher within w minutes" on x.y for
    # p = 1 to 10 and w = 1 and 3, in the set and each alone, and a first event that
    # starts nothing (so each joins holding no instance)
    multi = SubscriptionSet()
    alone = {}
    for p in range(1, 11):
        for w in (1, 3):
            query = parse_query(HIGHER.format(k=f"1.{p:02}", w=w))
            multi.add((p, w), Subscription(query, now=BASE))
            alone[(p, w)] = Subscription(query, now=BASE)
    first = _best(1, "x.y", 1, "1.00")
    assert multi.push(first) == []
    assert all(sub.push(first, live=True) == [] for sub in alone.values())
    # then the index holds the two sources of one group, not forty
    assert len(multi.index) == 1  # the step's source joins it while starts wait
    got = {}
    for seq, price in ((2, "1.00"), (3, "1.02"), (4, "1.00"), (6, "1.06")):
        # When trades come at minutes 2, 3, 4 and 6
        trade = _trade(seq, price)
        got[seq] = multi.push(trade)
        # Then each pattern gets what it gets alone, in the order they were added
        assert got[seq] == [(i, o) for i, sub in alone.items() for o in sub.push(trade, live=True)]
        assert len(multi.index) == 2
    # the trade at 1.02 completes the start at 1.00 for p = 1 (both windows)
    assert [(i, o.data) for i, o in got[3]] == [
        (i, {"a.price": "1.00", "b.price": "1.02"}) for i in ((1, 1), (1, 3))
    ]
    assert got[4] == []  # 1.00 is not above any threshold; the instances wait on
    # at minute 6 the start of minute 2 is past every window and left, that of minute 3
    # (1.02) is completed for p = 1 to 3 and that of minute 4 (1.00) for p = 1 to 5,
    # within 3 minutes only
    assert [(i, o.data["a.price"]) for i, o in got[6]] == [
        ((1, 3), "1.02"), ((1, 3), "1.00"), ((2, 3), "1.02"), ((2, 3), "1.00"),
        ((3, 3), "1.02"), ((3, 3), "1.00"), ((4, 3), "1.00"), ((5, 3), "1.00"),
    ]  # fmt: skip
    # the trade passed the group's two sources, one evaluation of the group and one push
    # of each pattern it completed; it was offered the two starts kept, not 40 instances
    assert (multi.last.sources, multi.last.evaluated, multi.last.instances) == (2, 6, 2)
    # the instances held are each pattern's own: the newest start for all twenty, the
    # minute 3 start for p = 4 to 10 and the minute 4 start for p = 6 to 10 (window 3)
    assert multi.instances == sum(s.engine.kept_events for s in alone.values()) == 20 + 7 + 5
    # When one is taken out, it goes on alone with the instances it held in the group
    left = multi.remove((6, 3))
    assert left.engine.kept_events == alone[(6, 3)].engine.kept_events == 3
    for seq, price in ((7, "1.10"), (8, "2.00")):
        trade = _trade(seq, price)
        assert left.push(trade, live=True) == alone[(6, 3)].push(trade, live=True)
    # 1.00 -> 1.10 at minute 7; 1.06 and 1.10 -> 2.00 at minute 8
    assert left.n == alone[(6, 3)].n == 3


def test_a_group_whose_threshold_would_raise_runs_its_patterns_alone() -> None:
    # Given two patterns of one group, one whose threshold overflows the decimal context
    multi = SubscriptionSet()
    alone = {}
    for k in ("1.05", "1E999999"):
        query = parse_query(HIGHER.format(k=k, w=10))
        multi.add(k, Subscription(query, now=BASE))
        alone[k] = Subscription(query, now=BASE)
    start = _best(1, "x.y", 1, "1.00")
    multi.push(start)
    for sub in alone.values():
        sub.push(start, live=True)
    outputs = []
    for seq, price in ((2, "1.00"), (3, "10.00"), (4, "1.00")):
        outputs.append(multi.push(_trade(seq, price)))
    # Then the start at 10.00, whose threshold overflows for one member, ends the group:
    # the other completes its instance, and the next trade fails that pattern (its
    # condition meets the overflow), as it does on its own
    assert [[(i, type(o).__name__) for i, o in out] for out in outputs] == [
        [],
        [("1.05", "Notification")],
        [("1E999999", "Failed")],
    ]
    assert "1E999999" not in multi and "1.05" in multi
    for seq, price in ((2, "1.00"), (3, "10.00")):
        assert alone["1E999999"].push(_trade(seq, price), live=True) == []
    with pytest.raises(ArithmeticError):
        alone["1E999999"].push(_trade(4, "1.00"), live=True)


# Form 4 watches: one subject's range (pushed only that subject's offer events once
# registered), any subject's (a pattern), and one offer's (every offer event)
WATCHES = [
    "SELECT MIN(ask) FROM offers WHERE subject = '{s}'",
    "SELECT MAX(best_value) FROM offers WHERE subject = '{s}' AND ask <= {p}",
    "SELECT MIN(ask) FROM offers WHERE subject MATCHES 'office.>'",
    "SELECT best_value FROM offers WHERE offer = {o}",
]


@st.composite
def watch_scripts(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
    """Offer events (each offer on one subject, as a market's) and trades, and watches
    added before events, with or without history, some taken out."""
    stream: list[dict[str, Any]] = []
    t = BASE
    for seq in range(1, draw(st.integers(1, 30)) + 1):
        t += dt.timedelta(minutes=draw(st.integers(0, 3)))
        offer = draw(st.integers(1, 4))
        e: dict[str, Any] = {"seq": seq, "time": _stamp(t), "subject": SUBJECTS[offer % 3],
                             "offer": offer}  # fmt: skip
        kind = draw(st.sampled_from(["offer_posted", "offer_amended", "offer_withdrawn",
                                     "best_offer", "trade", "trade"]))  # fmt: skip
        if kind in ("offer_posted", "offer_amended"):
            e.update(version=1, ask=draw(st.sampled_from(PRICES)), constraint="")
        elif kind == "best_offer":
            e.update(matching_bids=1, value=draw(st.sampled_from(PRICES)))
        elif kind == "trade":
            e.update(trade=seq, quantity=1, price=draw(st.sampled_from(PRICES)))
        e["type"] = kind
        stream.append(e)
    steps: list[tuple[Any, ...]] = []
    held: list[int] = []
    for _ in stream:
        for _ in range(draw(st.integers(0, 2))):
            if held and draw(st.integers(0, 5)) == 0:
                steps.append(("remove", held.pop(draw(st.integers(0, len(held) - 1)))))
                continue
            query = draw(st.sampled_from(WATCHES)).format(
                s=draw(st.sampled_from(SUBJECTS)),
                p=draw(st.sampled_from(PRICES)),
                o=draw(st.integers(1, 4)),
            )
            steps.append(("add", len(steps), query, draw(st.booleans()), 100_000, OUTPUT_LIMIT))
            held.append(len(steps) - 1)
        steps.append(("event",))
    return stream, steps


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(watch_scripts())
def test_watches_pushed_only_the_events_that_can_change_them_give_what_each_gives_alone(
    script: tuple[list[dict[str, Any]], list[tuple[Any, ...]]],
) -> None:
    _same_as_alone(script, False)


def test_a_subject_whose_last_watch_is_removed_is_forgotten() -> None:
    # Given two live watches of one subject's offers, taken into the set's per-subject
    # index by a first event
    multi = SubscriptionSet()
    query = parsed(f"SELECT MIN(ask) FROM offers WHERE subject = '{SUBJECTS[0]}'")
    for sub_id in ("a", "b"):
        sub = Subscription(query, now=BASE, limits=Limits(state=100_000, outputs=OUTPUT_LIMIT))
        sub.history_done()
        multi.add(sub_id, sub)
    posted = {"seq": 1, "time": _stamp(BASE), "subject": SUBJECTS[0], "offer": 1,
              "type": "offer_posted", "version": 1, "ask": "1.00", "constraint": ""}  # fmt: skip
    multi.push(posted)
    assert [sorted(w) for w in multi._watching.values()] == [["a", "b"]]

    # When one and then the other is removed
    multi.remove("a")
    assert [sorted(w) for w in multi._watching.values()] == [["b"]]
    multi.remove("b")

    # Then nothing is kept for the subject (an empty entry was, for each subject ever watched)
    assert multi._watching == {}
