"""Generated event streams and patterns: the automata against a brute force written from
SPEC 8.3's definitions of form 3.

The brute force never looks at the parsed query or the product's code: every generated
pattern carries its meaning as Python (each comparison a function of the bound events,
``NOT`` read by polarity), and the matches are found by the plainest reading of the
definitions: from every event passing the first source, walk the later events; ``NEXT``
takes the first that passes its source and condition, ``FOLD`` skips events failing
``c``, ends at one where ``c`` holds and ``f`` fails, and lets each iteration move on;
``WITHIN`` stops the walk at the first event too late. Outputs are sorted by completing
event, first ``seq``, all ``seq``s, side.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matching.subscriptions import parse_query, run_offline, to_text

BASE = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
SUBJECTS = ["office.supplies.pencils", "office.supplies.pens"]
PRICES = ["0.90", "1.00", "1.10", "1.20"]
OPS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
       ">": operator.gt, ">=": operator.ge}  # fmt: skip

Env = dict[str, Any]  # "alias" -> event, "alias.last" -> event, "#name" -> aggregate, "DUR"


@st.composite
def streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    events = []
    t = BASE
    for seq in range(1, draw(st.integers(1, 14)) + 1):
        t += dt.timedelta(minutes=draw(st.integers(0, 8)))
        subject = draw(st.sampled_from(SUBJECTS))
        e: dict[str, Any] = {"seq": seq, "time": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
                             "subject": subject}  # fmt: skip
        if draw(st.integers(0, 4)):
            e.update(type="trade", offer=1, trade=seq, quantity=1,
                     price=draw(st.sampled_from(PRICES)))  # fmt: skip
        else:  # no price: comparisons that read it are false either way
            e.update(type="offer_posted", offer=seq, version=1, ask="1.00", constraint="")
        events.append(e)
    return events


def _time(e: dict[str, Any]) -> dt.datetime:
    return dt.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)


def _price(e: dict[str, Any] | None) -> Decimal | None:
    return None if e is None or "price" not in e else Decimal(e["price"])


@dataclass
class Cmp:
    """A comparison: its text and the function of the environment giving its two sides."""

    text: str
    sides: Callable[[Env], tuple[Any, Any]]
    op: str

    def holds(self, env: Env, positive: bool) -> bool:
        left, right = self.sides(env)
        if left is None or right is None:
            return False  # SPEC 8.3: after NOT is pushed down, absent means false
        return OPS[self.op](left, right) == positive


@dataclass
class Node:
    kind: str  # "not", "and", "or"
    parts: list[Any]

    @property
    def text(self) -> str:
        if self.kind == "not":
            return f"NOT ({self.parts[0].text})"
        return f" {self.kind.upper()} ".join(f"({p.text})" for p in self.parts)

    def holds(self, env: Env, positive: bool) -> bool:
        if self.kind == "not":
            return self.parts[0].holds(env, not positive)
        results = [p.holds(env, positive) for p in self.parts]
        conjunction = (self.kind == "and") == positive
        return all(results) if conjunction else any(results)


def holds(c: Any, env: Env) -> bool:
    return c.holds(env, True)


@st.composite
def comparisons(draw: st.DrawFn, me: str | None, earlier: list[str], fold: bool,
                aggregates: list[str]) -> Cmp:  # fmt: skip
    """An atom over the candidate ``me`` (``None``: a final WHERE) and earlier aliases."""
    other = draw(st.sampled_from(earlier))
    target = me or draw(st.sampled_from(earlier))
    op = draw(st.sampled_from(list(OPS)))
    k = draw(st.sampled_from(PRICES))
    choices = ["subject", "price", "literal", "arith", "dur", "scaled"]
    if fold:
        choices.append("last")
    if aggregates:
        choices.append("aggregate")
    which = draw(st.sampled_from(choices))
    # the order comparisons below also come with their sides swapped: the automata sort
    # the instances waiting on "candidate op value fixed earlier" whichever side it is on
    swap = draw(st.booleans())
    if which == "subject":
        return Cmp(f"{target}.subject {op} {other}.subject",
                   lambda env: (env[target]["subject"], env[other]["subject"]), op)  # fmt: skip
    if which == "price":
        return _ordered(f"{target}.price", f"{other}.price", op, swap,
                        lambda env: (_price(env[target]), _price(env[other])))  # fmt: skip
    if which == "literal":
        return _ordered(f"{target}.price", k, op, swap,
                        lambda env: (_price(env[target]), Decimal(k)))  # fmt: skip
    if which == "scaled":  # a threshold computed from an earlier binding

        def scaled(env: Env) -> tuple[Any, Any]:
            b = _price(env[other])
            return _price(env[target]), None if b is None else Decimal(k) * b

        return _ordered(f"{target}.price", f"{k} * {other}.price", op, swap, scaled)
    if which == "arith":

        def arith(env: Env) -> tuple[Any, Any]:
            a, b = _price(env[target]), _price(env[other])
            if a is None or b is None or b == 0:
                return None, None
            return (a - b) / b * 100, Decimal(5)

        return Cmp(f"({target}.price - {other}.price) / {other}.price * 100 {op} 5", arith, op)
    if which == "dur":
        minutes = draw(st.integers(0, 30))
        return Cmp(f"DUR {op} {minutes}m", lambda env: (env["DUR"], Decimal(60 * minutes)), op)
    if which == "last":
        return _ordered(f"{target}.price", f"{target}.last.price", op, swap,
                        lambda env: (_price(env[target]), _price(env[target + ".last"])))  # fmt: skip
    name = draw(st.sampled_from(aggregates))
    n = draw(st.integers(0, 3))
    return Cmp(f"{name} {op} {n}", lambda env: (env["#" + name], Decimal(n)), op)


def _ordered(left: str, right: str, op: str, swap: bool,
             sides: Callable[[Env], tuple[Any, Any]]) -> Cmp:  # fmt: skip
    """``left op right``, or the same comparison written ``right op' left``."""
    if not swap:
        return Cmp(f"{left} {op} {right}", sides, op)
    flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    return Cmp(f"{right} {flipped} {left}", lambda env: sides(env)[::-1], flipped)


@st.composite
def conditions(draw: st.DrawFn, *args: Any) -> Any:
    first = draw(comparisons(*args))
    shape = draw(st.sampled_from(["atom", "atom", "not", "and", "or"]))
    if shape == "atom":
        return first
    if shape == "not":
        return Node("not", [first])
    return Node(shape, [first, draw(comparisons(*args))])


@dataclass
class Step:
    kind: str
    alias: str
    trade_only: bool
    c: Any
    f: Any = None
    aggregate: str | None = None  # the COUNT's name


@dataclass
class Side:
    first_trade_only: bool
    steps: list[Step]
    where: Any
    within: int | None  # minutes
    text: str


def _source(trade_only: bool, alias: str) -> str:
    return f"{'FILTER{type = ' + chr(39) + 'trade' + chr(39) + '}(EVENTS)' if trade_only else 'EVENTS'} AS {alias}"


@st.composite
def sides(draw: st.DrawFn) -> Side:
    aliases = ["a"]
    aggregates: list[str] = []
    first_trade_only = draw(st.booleans())
    text = f"FROM {_source(first_trade_only, 'a')}"
    steps = []
    for i in range(draw(st.integers(0, 3))):
        alias = "bcd"[i]
        kind = draw(st.sampled_from(["next", "fold"]))
        trade_only = draw(st.booleans())
        c = draw(conditions(alias, aliases, kind == "fold", aggregates))
        if kind == "next":
            step = Step(kind, alias, trade_only, c)
            text += f" NEXT{{{c.text}}} {_source(trade_only, alias)}"
        else:
            f = draw(conditions(alias, aliases, True, aggregates))
            name = f"n{i}"
            step = Step(kind, alias, trade_only, c, f, name)
            text += (
                f" FOLD{{{c.text}, {f.text}, COUNT AS {name}, SUM({alias}.price) AS s{i}}} "
                f"{_source(trade_only, alias)}"
            )
            aggregates += [name, f"s{i}"]
        steps.append(step)
        aliases.append(alias)
    where = None
    if draw(st.booleans()):
        where = draw(conditions(None, aliases, False, aggregates))
        text += f" WHERE {where.text}"
    within = draw(st.none() | st.integers(0, 40))
    if within is not None:
        text += f" WITHIN {within}m"
    items = [f"{a}.price" for a in aliases] + aggregates + ["DUR", "start", "end"]
    return Side(first_trade_only, steps, where, within, f"SELECT {', '.join(items)} {text}")


# -- the brute force ------------------------------------------------------------------------


def matches(side: Side, events: list[dict[str, Any]]) -> list[tuple[int, int, tuple, dict]]:
    found = []

    def passes(trade_only: bool, e: dict[str, Any]) -> bool:
        return not trade_only or e["type"] == "trade"

    def walk(k: int, env: Env, pos: int, first: dict[str, Any], bound: list[dict]) -> None:
        if k == len(side.steps):
            env = {**env, "DUR": _seconds(first, bound[-1])}
            if side.where is None or holds(side.where, env):
                found.append((bound[-1]["seq"], first["seq"], tuple(e["seq"] for e in bound),
                              data(side, env, first, bound)))  # fmt: skip
            return
        step = side.steps[k]
        previous = bound[-1]
        count = 0
        total: Decimal | None = None
        for e in events[pos + 1 :]:
            if side.within is not None and _time(e) - _time(first) > dt.timedelta(
                minutes=side.within
            ):
                return  # WITHIN: the instance is dropped
            if not passes(step.trade_only, e):
                continue
            here = {**env, step.alias: e, step.alias + ".last": previous,
                    "DUR": _seconds(first, e)}  # fmt: skip
            if not holds(step.c, here):
                continue
            if step.kind == "next":
                walk(k + 1, here, events.index(e), first, [*bound, e])
                return
            if not holds(step.f, here):
                return
            count += 1
            if "price" in e:  # SUM skips an iteration without the attribute
                total = (total or Decimal(0)) + Decimal(e["price"])
            moved = {**here, "#" + (step.aggregate or ""): Decimal(count),
                     "#s" + (step.aggregate or "")[1:]: total}  # fmt: skip
            walk(k + 1, moved, events.index(e), first, [*bound, e])
            previous = e

    for i, e in enumerate(events):
        if passes(side.first_trade_only, e):
            walk(0, {"a": e}, i, e, [e])
    return found


def _seconds(first: dict[str, Any], last: dict[str, Any]) -> Decimal:
    return Decimal(int((_time(last) - _time(first)).total_seconds()))


def data(side: Side, env: Env, first: dict, bound: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for alias in ["a", *(s.alias for s in side.steps)]:
        if "price" in env[alias]:
            out[f"{alias}.price"] = env[alias]["price"]
    for s in side.steps:
        if s.aggregate:
            out[s.aggregate] = int(env["#" + s.aggregate])
            total = env["#s" + s.aggregate[1:]]
            if total is not None:
                out["s" + s.aggregate[1:]] = str(total)
    out.update(DUR=str(env["DUR"]), start=first["time"], end=bound[-1]["time"])
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.lists(sides(), min_size=1, max_size=2))
def test_the_automata_equal_the_brute_force(events, generated):
    text = " UNION ".join(s.text for s in generated)
    query = parse_query(text)
    assert parse_query(to_text(query)) == query
    expected = sorted(
        (m[0], m[1], m[2], i, m[3]) for i, s in enumerate(generated) for m in matches(s, events)
    )
    now = _time(events[0])
    got = list(run_offline(query, events, now=now))
    assert got == [{"n": n, "seq": seq, "data": d} for n, (seq, *_, d) in enumerate(expected, 1)], (
        text
    )
