"""Generated event files and queries: the evaluator against a plain reading of SPEC 8.3.

The brute force below never looks at the parsed query: each generated query comes with
its meaning written as Python (a predicate per conjunct, the time bounds, the window
rules), and the expected notifications are computed from that meaning by the dullest
possible code: filter the processed events, then walk them.
"""

from __future__ import annotations

import datetime as dt
import itertools
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matching.subscriptions import parse_query, run_offline, to_text

BASE = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
SUBJECTS = ["office.supplies.pencils", "office.supplies.pens", "garden.tools"]
PRICES = ["0.90", "1.00", "1.05", "1.10", "1.20", "1.333"]
OPS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
       ">": operator.gt, ">=": operator.ge}  # fmt: skip


def iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def time_of(e: dict) -> dt.datetime:
    return dt.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)


# -- events ---------------------------------------------------------------------------------


@st.composite
def event_files(draw, max_size=12):
    n = draw(st.integers(0, max_size) | st.just(max_size))
    seq, minute, out = 0, 0, []
    for _ in range(n):
        seq += draw(st.integers(1, 3))
        minute += draw(st.sampled_from([0, 1, 5, 10]))
        kind = draw(st.sampled_from(["trade", "offer_posted", "best_offer"]))
        e: dict[str, Any] = {
            "seq": seq,
            "time": iso(BASE + dt.timedelta(minutes=minute)),
            "type": kind,
            "subject": draw(st.sampled_from(SUBJECTS)),
            "offer": draw(st.integers(1, 4)),
        }
        if kind == "trade":
            e["trade"] = seq
            if draw(st.integers(0, 5)):
                e["price"] = draw(st.sampled_from(PRICES))
            if draw(st.booleans()):
                e["quantity"] = draw(st.integers(1, 30))
        elif kind == "offer_posted":
            e.update(version=1, ask=draw(st.sampled_from(PRICES)), constraint="lot = 1")
            if draw(st.booleans()):
                e["quantity_max"] = draw(st.integers(1, 30))
            if draw(st.booleans()):
                e["price"] = draw(st.sampled_from(PRICES))  # not in 8.1, but harmless here
        else:
            e["matching_bids"] = draw(st.integers(0, 3))
            if draw(st.booleans()):
                e["value"] = draw(st.sampled_from(PRICES))
        if draw(st.integers(0, 5)) == 0:
            del e["offer"]
        out.append(e)
    return out


# -- conjuncts with their meaning -------------------------------------------------------------


def dec(e: dict, name: str) -> Decimal | None:
    return Decimal(e[name]) if name in e else None


def has(e, name):
    return name in e


@st.composite
def conjuncts(draw, alias: str = ""):
    """(text, meaning) for one conjunct; ``alias`` prefixes names in form 2."""
    p = draw(st.sampled_from(PRICES))
    q = draw(st.sampled_from(PRICES))
    lo, hi = sorted([Decimal(p), Decimal(q)])
    k = draw(st.integers(0, 31))
    subject = draw(st.sampled_from(SUBJECTS))
    t = draw(st.sampled_from(["trade", "offer_posted", "best_offer"]))
    minute = draw(st.integers(0, 40))
    a = alias
    options: list[tuple[str, Callable[[dict], bool]]] = [
        (f"{a}price > {p}", lambda e: has(e, "price") and dec(e, "price") > Decimal(p)),
        (f"{a}price <= {p}", lambda e: has(e, "price") and dec(e, "price") <= Decimal(p)),
        (f"{a}price != {p}", lambda e: has(e, "price") and dec(e, "price") != Decimal(p)),
        (f"{a}price BETWEEN {lo} AND {hi}",
         lambda e: has(e, "price") and lo <= dec(e, "price") <= hi),
        (f"{a}ask IN ({lo}, {hi}]", lambda e: has(e, "ask") and lo < dec(e, "ask") <= hi)
        if lo < hi
        else (f"{a}ask IN [{lo}, {hi}]", lambda e: has(e, "ask") and dec(e, "ask") == lo),
        (f"{a}type = '{t}'", lambda e: e["type"] == t),
        (f"{a}subject = '{subject}'", lambda e: e["subject"] == subject),
        (f"{a}subject MATCHES 'office.>'", lambda e: e["subject"].startswith("office.")),
        (f"{a}subject MATCHES '*.tools'", lambda e: e["subject"] == "garden.tools"),
        (f"({a}price > {p} OR {a}subject MATCHES 'garden.>')",
         lambda e: (has(e, "price") and dec(e, "price") > Decimal(p))
         or e["subject"] == "garden.tools"),
        (f"(NOT {a}price > {p})", lambda e: has(e, "price") and dec(e, "price") <= Decimal(p)),
        (f"(NOT {a}subject MATCHES 'office.*.pens')",
         lambda e: e["subject"] != "office.supplies.pens"),
        (f"{a}offer = *", lambda e: has(e, "offer")),
        (f"{a}quantity >= {k}", lambda e: has(e, "quantity") and e["quantity"] >= k),
        (f"{a}quantity_max < {k}.5", lambda e: has(e, "quantity_max") and e["quantity_max"] < k + 0.5),
        (f"{a}offer IN [2, 4)", lambda e: has(e, "offer") and 2 <= e["offer"] < 4),
        (f"({a}offer = 1 OR {a}offer >= 3 AND {a}type = 'trade')",
         lambda e: has(e, "offer") and (e["offer"] == 1 or e["offer"] >= 3 and e["type"] == "trade")),
        (f"{a}time >= TIMESTAMP '{iso(BASE + dt.timedelta(minutes=minute))}'",
         lambda e: time_of(e) >= BASE + dt.timedelta(minutes=minute)),
    ]  # fmt: skip
    return draw(st.sampled_from(options))


MINUTES = [None] * 6 + [-30, -10, -1, 0, 5, 15, 40]


@st.composite
def times(draw, prefix: str = ""):
    start = draw(st.sampled_from(MINUTES))
    end = draw(st.sampled_from(MINUTES))
    texts = []
    for name, m in (("start_time", start), ("end_time", end)):
        if m is not None:
            sign = "+" if m >= 0 else "-"
            texts.append(f"{prefix}{name} = NOW {sign} {abs(m)}m" if m else f"{prefix}{name} = NOW")
    return start, end, texts


def rare_times(prefix: str = ""):
    """Mostly no bounds at all, so that joins get events to work on."""
    return st.sampled_from([0, 1, 2]).flatmap(
        lambda k: times(prefix) if k == 0 else st.just((None, None, []))
    )


@st.composite
def nows(draw):
    m = draw(st.sampled_from([None, None, None, 0, 7, 20, 45, 200]))
    return None if m is None else BASE + dt.timedelta(minutes=m)


# -- form 1 ---------------------------------------------------------------------------------

AGG_ATTRS = {"AVG": ["price", "quantity"], "SUM": ["price", "quantity"],
             "MIN": ["price", "time", "subject", "offer"], "MAX": ["price", "time", "offer"],
             "COUNT": ["price", "offer", "quantity"]}  # fmt: skip


def typed(attr: str, raw: Any) -> Any:
    if attr == "time":
        return dt.datetime.strptime(raw, "%Y-%m-%dT%H:%M:%SZ")
    if attr in ("price", "ask", "value"):
        return Decimal(raw)
    return raw


def shown(func: str, attr: str, window: list[dict]) -> Any:
    values = [e[attr] for e in window]
    if func == "COUNT":
        return len(window)
    if func in ("MIN", "MAX"):
        pick = min if func == "MIN" else max
        return pick(values, key=lambda v: typed(attr, v))
    if attr == "quantity":
        total: Any = sum(values)
    else:
        total = sum(Decimal(v) for v in values)
    if func == "SUM":
        return total if attr == "quantity" else str(total)
    with localcontext() as ctx:
        ctx.prec = 60
        return str((Decimal(total) / len(values)).quantize(Decimal("1E-8"), ROUND_HALF_EVEN))


def exact(func: str, attr: str, window: list[dict]) -> Any:
    if func in ("COUNT", "MIN", "MAX"):
        v = shown(func, attr, window)
        return v if func == "COUNT" else typed(attr, v)
    total = sum(Fraction(Decimal(str(e[attr]))) for e in window)
    return total if func == "SUM" else total / len(window)


@dataclass
class Form1:
    text: str
    conds: list[Callable[[dict], bool]]
    start: int | None
    end: int | None
    select: list[tuple[str, str]] | None  # (attr or "FUNC:attr", key)
    mode: str = "plain"
    n: int = 1
    group_by: list[str] = field(default_factory=list)
    having: tuple[str, str, str, Any, bool] | None = None  # func, attr, op, literal, reset
    required: list[str] = field(default_factory=list)


@st.composite
def form1_queries(draw):
    picked = draw(st.lists(conjuncts(), max_size=2))
    start, end, time_texts = draw(times())
    where = [t for t, _ in picked] + time_texts
    mode = draw(st.sampled_from(["plain", "tumbling", "having"]))
    q = Form1("", [f for _, f in picked], start, end, None, mode)
    group = draw(st.sampled_from([[], ["subject"], ["type", "subject"]]))
    if mode == "plain":
        if draw(st.booleans()):
            attrs = draw(st.lists(st.sampled_from(["price", "subject", "seq", "quantity", "time"]),
                                  min_size=1, max_size=3, unique=True))  # fmt: skip
            q.select = [(a, f"k_{a}" if draw(st.booleans()) else a) for a in attrs]
            select = ", ".join(a if k == a else f"{a} AS {k}" for a, k in q.select)
        else:
            select = "*"
        tail = ""
    elif mode == "tumbling":
        q.n = n = draw(st.integers(1, 3))
        every = [(f, a) for f in sorted(AGG_ATTRS) for a in AGG_ATTRS[f]]
        pairs = draw(st.lists(st.sampled_from(every), min_size=1, max_size=2, unique=True))
        items, q.select = [], []
        for g in group:
            if draw(st.booleans()):
                items.append(g)
                q.select.append((g, g))
        for i, (func, attr) in enumerate(pairs):
            if draw(st.booleans()):
                key = f"agg{i}"
                items.append(f"{func}({attr}, {n}) AS {key}")
            else:
                key = f"{func}({attr}, {n})"
                items.append(f"{func.lower()}({attr},{n})")
            q.select.append((f"{func}:{attr}", key))
            q.required.append(attr)
        select = ", ".join(items)
        tail = f" GROUP BY {', '.join(group)}" if group else ""
        q.group_by = group
    else:
        func = draw(st.sampled_from(sorted(AGG_ATTRS)))
        attr = draw(st.sampled_from(AGG_ATTRS[func]))
        n = draw(st.integers(1, 3))
        op = draw(st.sampled_from(sorted(OPS)))
        if func == "COUNT":
            lit, text_lit = n, str(n)
        elif attr == "time":
            t = BASE + dt.timedelta(minutes=draw(st.integers(0, 40)))
            lit, text_lit = t.replace(tzinfo=None), f"TIMESTAMP '{iso(t)}'"
        elif attr == "subject":
            s = draw(st.sampled_from(SUBJECTS))
            lit, text_lit = s, f"'{s}'"
        elif attr in ("offer", "quantity") and func != "AVG":
            k = draw(st.integers(1, 30))
            lit, text_lit = k, str(k)
        else:
            p = draw(st.sampled_from(PRICES + ["1.1", "3", "15"]))
            lit, text_lit = Decimal(p), p
        reset = draw(st.booleans())
        q.having = (func, attr, op, lit, reset)
        q.n, q.group_by, q.required = n, group, [attr]
        q.select = None if draw(st.booleans()) else [("price", "price"), ("seq", "seq")]
        select = "*" if q.select is None else "price, seq"
        order = [
            f" GROUP BY {', '.join(group)}" if group else "",
            f" HAVING {func}({attr}, {n}) {op} {text_lit}{' RESET' if reset else ''}",
        ]
        if draw(st.booleans()):
            order.reverse()
        tail = "".join(order)
    q.text = f"SELECT {select}" + (f" WHERE {', '.join(where)}" if where else "") + tail
    return q


def processed(events: list[dict], now: dt.datetime, end: dt.datetime | None):
    """The events the subscription gets to see, and whether it completes."""
    history = [e for e in events if time_of(e) < now]
    live = [e for e in events if time_of(e) >= now]
    if end is not None and end <= now:
        return history, True
    seen = list(history)
    for e in live:
        if end is not None and time_of(e) >= end:
            return seen, True
        seen.append(e)
    return seen, False


def at(now: dt.datetime, minutes: int | None, default: dt.datetime | None):
    return default if minutes is None else now + dt.timedelta(minutes=minutes)


def brute_form1(q: Form1, events: list[dict], now: dt.datetime) -> list[dict]:
    start, end = at(now, q.start, now), at(now, q.end, None)
    seen, completes = processed(events, now, end)
    matching = [
        e
        for e in seen
        if start <= time_of(e) and (end is None or time_of(e) < end)
        and all(c(e) for c in q.conds) and all(r in e for r in q.required)
    ]  # fmt: skip
    found: list[tuple[int, dict]] = []

    def project(e):
        if q.select is None:
            return dict(e)
        return {k: e[a] for a, k in q.select if a in e}

    groups: dict[tuple, list[dict]] = {}
    delivered: set[int] = set()
    for e in matching:
        key = tuple(e.get(g) for g in q.group_by)
        if q.mode == "plain":
            found.append((e["seq"], project(e)))
            continue
        groups.setdefault(key, []).append(e)
        if q.mode == "tumbling":
            if len(groups[key]) == q.n:
                window, groups[key] = groups[key], []
                data = {}
                for a, k in q.select:
                    if ":" in a:
                        func, attr = a.split(":")
                        data[k] = shown(func, attr, window)
                    elif a in e:
                        data[k] = e[a]
                found.append((e["seq"], data))
        else:
            func, attr, op, lit, reset = q.having
            window = groups[key][-q.n :]
            if len(window) == q.n and OPS[op](exact(func, attr, window), lit):
                for x in window:
                    if x["seq"] not in delivered:
                        delivered.add(x["seq"])
                        found.append((x["seq"], project(x)))
                if reset:
                    groups[key] = []
    out = [{"n": i, "seq": s, "data": d} for i, (s, d) in enumerate(found, 1)]
    return out + ([{"end": True}] if completes else [])


def registration(events: list[dict], now: dt.datetime | None) -> dt.datetime:
    """SPEC 8.3: without --now a subscription registers at the first event's time."""
    if now is not None:
        return now
    return time_of(events[0]) if events else BASE


def run(text: str, events: list[dict], now: dt.datetime) -> list[dict]:
    return list(run_offline(parse_query(text), events, now=now))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form1_queries(), event_files(), nows())
def test_form1_agrees_with_the_definitions(q, events, now):
    now = registration(events, now)
    assert run(q.text, events, now) == brute_form1(q, events, now), q.text


# -- form 2 ---------------------------------------------------------------------------------

JOINS = [
    ("{x}.subject = {y}.subject", lambda x, y: x["subject"] == y["subject"]),
    ("{x}.offer < {y}.offer", lambda x, y: "offer" in x and "offer" in y and x["offer"] < y["offer"]),
    ("{x}.offer != {y}.offer", lambda x, y: "offer" in x and "offer" in y and x["offer"] != y["offer"]),
    ("{x}.price >= {y}.ask", lambda x, y: "price" in x and "ask" in y
     and Decimal(x["price"]) >= Decimal(y["ask"])),
    ("{x}.quantity = {y}.quantity_max", lambda x, y: "quantity" in x and "quantity_max" in y
     and x["quantity"] == y["quantity_max"]),
]  # fmt: skip


@dataclass
class Form2:
    text: str
    aliases: list[str]
    conds: dict[str, list[Callable[[dict], bool]]]
    joins: list[tuple[str, str, Callable[[dict, dict], bool]]]
    times: dict[str, tuple[int | None, int | None]]
    select: list[tuple[str, str]] | None


@st.composite
def form2_queries(draw):
    aliases = ["a", "b", "c"][: draw(st.sampled_from([2, 2, 3]))]
    where, conds, joins = [], {a: [] for a in aliases}, []
    for a in aliases:
        for text, fn in draw(st.lists(conjuncts(alias=a + "."), max_size=1)):
            where.append(text)
            conds[a].append(fn)
    for _ in range(draw(st.integers(0, 1))):
        x, y = draw(st.permutations(aliases))[:2]
        text, fn = draw(st.sampled_from(JOINS))
        where.append(text.format(x=x, y=y))
        joins.append((x, y, fn))
    d_start, d_end, d_texts = draw(rare_times())
    where += d_texts
    ranges = {}
    for a in aliases:
        s, e, texts = draw(rare_times(prefix=a + "."))
        where += texts
        ranges[a] = (d_start if s is None else s, d_end if e is None else e)
    if draw(st.booleans()):
        select = None
        select_text = "*"
    else:
        select = draw(st.lists(st.tuples(st.sampled_from(aliases),
                                         st.sampled_from(["offer", "price", "subject", "seq"])),
                               min_size=1, max_size=3, unique=True))  # fmt: skip
        select_text = ", ".join(f"{a}.{x}" for a, x in select)
    if not where:
        where = [f"{aliases[0]}.offer = *"]
        conds[aliases[0]].append(lambda e: "offer" in e)
    text = f"SELECT {select_text} FROM {' AND '.join(aliases)} WHERE {', '.join(where)}"
    return Form2(text, aliases, conds, joins, ranges, select)


def brute_form2(q: Form2, events: list[dict], now: dt.datetime) -> list[dict]:
    ranges = {a: (at(now, s, now), at(now, e, None)) for a, (s, e) in q.times.items()}
    ends = [r[1] for r in ranges.values()]
    end = None if any(x is None for x in ends) else max(ends)
    seen, completes = processed(events, now, end)

    def qualifies(a, e):
        s, t = ranges[a]
        return s <= time_of(e) and (t is None or time_of(e) < t) and all(c(e) for c in q.conds[a])

    found = []
    for combo in itertools.product(seen, repeat=len(q.aliases)):
        if len({e["seq"] for e in combo}) < len(combo):
            continue
        bound = dict(zip(q.aliases, combo, strict=True))
        if not all(qualifies(a, e) for a, e in bound.items()):
            continue
        if not all(fn(bound[x], bound[y]) for x, y, fn in q.joins):
            continue
        last = max(e["seq"] for e in combo)
        if q.select is None:
            data = {a: dict(e) for a, e in bound.items()}
        else:
            data = {}
            for a, attr in q.select:
                part = data.setdefault(a, {})
                if attr in bound[a]:
                    part[attr] = bound[a][attr]
        found.append(((last, tuple(e["seq"] for e in combo)), last, data))
    found.sort(key=lambda f: f[0])
    out = [{"n": i, "seq": s, "data": d} for i, (_, s, d) in enumerate(found, 1)]
    return out + ([{"end": True}] if completes else [])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form2_queries(), event_files(max_size=10), nows())
def test_form2_agrees_with_the_definitions(q, events, now):
    now = registration(events, now)
    assert run(q.text, events, now) == brute_form2(q, events, now), q.text


@settings(max_examples=200, deadline=None)
@given(st.one_of(form1_queries(), form2_queries()))
def test_queries_print_canonical_text_that_parses_back(q):
    parsed = parse_query(q.text)
    text = to_text(parsed)
    assert parse_query(text) == parsed
    assert to_text(parse_query(text)) == text
