"""Form 4 against a brute force (SPEC 8.3): on random order flows (post, amend, withdraw,
cancel, close, best offers moving values, trades) and random watches, every
notification equals a from-scratch recomputation over the open offers at its event, and
a notification goes out exactly when the answer changed under the threshold rule.

The brute force is written here from SPEC 8.3's text, independently of the engine: it
keeps the open offers as plain dicts, and after every event scans all of them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from matching.subjects import subject_matches
from matching.subscriptions import parse_query, parse_timestamp, run_offline
from tests.matching.subscriptions.form4_cases import Flow

SUBJECTS = ["office.supplies.pencils", "office.supplies.pens", "garden.tools.saws"]
PATTERNS = ["office.>", "*.tools.*", "office.*.pens", "office.supplies.pencils"]
ASKS = ["0.90", "1.0", "1.00", "1.05", "1.10", "2", "0"]
VALUES = ["0", "0.95", "1.00", "1.04", "1.06", "1.12", "1.5"]
QUANTITIES = [None, 100, 1000, 2000, "2000.5", 5000]
NUMERIC = ["offer", "ask", "quantity_min", "quantity_max", "best_value", "matching_bids"]
THRESHOLDS = [None, "0", "0.05", "0.5", "5%", "50%"]
OFFERS = st.integers(1, 6)


@st.composite
def flows(draw) -> Flow:
    f = Flow()
    open_: set[int] = set()
    for _ in range(draw(st.integers(0, 40))):
        action = draw(st.sampled_from(["post", "amend", "end", "best", "best", "trade"]))
        # mostly act on open offers, sometimes on any id (not open, never posted)
        pool = sorted(open_) if open_ and draw(st.integers(0, 4)) else list(range(1, 7))
        offer = draw(st.sampled_from(pool))
        subject = draw(st.sampled_from(SUBJECTS))
        if action in ("post", "amend"):
            terms = {
                name: q
                for name in ("quantity_min", "quantity_max")
                if (q := draw(st.sampled_from(QUANTITIES))) is not None
            }
            ask = draw(st.sampled_from(ASKS))
            (f.post if action == "post" else f.amend)(offer, ask, subject, **terms)
            open_.add(offer)
        elif action == "end":
            how = draw(st.sampled_from(["offer_withdrawn", "offer_cancelled", "offer_closed"]))
            f.end(offer, how, subject)
            open_.discard(offer)
        elif action == "best":
            value = draw(st.sampled_from([None, *VALUES]))
            f.best(offer, value, draw(st.integers(0, 5)), subject)
        else:
            f.add("trade", subject, offer=offer, trade=1, price="1.00", quantity=5)
    return f


@st.composite
def watches(draw) -> dict[str, Any]:
    """A watch's parameters; ``text`` is its query."""
    w: dict[str, Any] = {
        "attribute": draw(st.sampled_from(NUMERIC)),
        "threshold": draw(st.sampled_from(THRESHOLDS)),
    }
    notify = "" if w["threshold"] is None else f" NOTIFY WHEN CHANGED BY {w['threshold']}"
    if draw(st.integers(0, 3)) == 0:
        w["offer"] = draw(OFFERS)
        w["text"] = f"SELECT {w['attribute']} FROM offers WHERE offer = {w['offer']}{notify}"
        return w
    w["func"] = draw(st.sampled_from(["MIN", "MAX"]))
    exact = draw(st.booleans())
    w["subject"] = draw(st.sampled_from(SUBJECTS if exact else PATTERNS))
    where = [f"subject {'=' if exact else 'MATCHES'} '{w['subject']}'"]
    w["exact"] = exact
    w["key"] = None
    if draw(st.booleans()):
        key = w["key"] = draw(st.sampled_from(NUMERIC))
        lo = draw(st.sampled_from([None, 0, 1, 2, 1000, 2000]))
        hi = draw(st.sampled_from([None, 1, 3, 2000, 5000]))
        lo_closed, hi_closed = draw(st.booleans()), draw(st.booleans())
        w["range"] = (lo, lo_closed, hi, hi_closed)
        if lo is not None:
            where.append(f"{key} {'>=' if lo_closed else '>'} {lo}")
        if hi is not None:
            where.append(f"{key} {'<=' if hi_closed else '<'} {hi}")
        if lo is None and hi is None:
            where.append(f"{key} = *")
    w["text"] = f"SELECT {w['func']}({w['attribute']}) FROM offers WHERE {', '.join(where)}{notify}"
    return w


# -- the brute force ------------------------------------------------------------------------


def open_offers_after(events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The open offers after ``events``, read from SPEC 8.3's fine points: id -> raw values."""
    offers: dict[int, dict[str, Any]] = {}
    for e in events:
        t, id_ = e["type"], e.get("offer")
        if t in ("offer_posted", "offer_amended"):
            kept = {}
            if t == "offer_amended" and id_ in offers:
                kept = {
                    k: offers[id_][k] for k in ("best_value", "matching_bids") if k in offers[id_]
                }
            offers[id_] = {
                "offer": id_,
                **{k: e[k] for k in ("subject", "ask", "quantity_min", "quantity_max") if k in e},
                "matching_bids": 0,
                **kept,
            }
        elif t in ("offer_withdrawn", "offer_cancelled", "offer_closed"):
            offers.pop(id_, None)
        elif t == "best_offer" and id_ in offers:
            offers[id_].pop("best_value", None)
            if "value" in e:
                offers[id_]["best_value"] = e["value"]
            offers[id_]["matching_bids"] = e["matching_bids"]
    return offers


def number(raw: Any) -> Decimal:
    return Decimal(str(raw))


def in_range(w: dict[str, Any], o: dict[str, Any]) -> bool:
    if w["exact"]:
        if o["subject"] != w["subject"]:
            return False
    elif not subject_matches(w["subject"], o["subject"]):
        return False
    if w["key"] is None:
        return True
    if w["key"] not in o:
        return False
    v = number(o[w["key"]])
    lo, lo_closed, hi, hi_closed = w["range"]
    if lo is not None and not (v >= lo if lo_closed else v > lo):
        return False
    return hi is None or (v <= hi if hi_closed else v < hi)


def recompute(w: dict[str, Any], offers: dict[int, dict[str, Any]]) -> tuple[int, Any] | None:
    """The answer from scratch: ``(offer, raw value)`` or ``None``."""
    attribute = w["attribute"]
    if "offer" in w:
        o = offers.get(w["offer"])
        return None if o is None or attribute not in o else (w["offer"], o[attribute])
    found = [
        (number(o[attribute]), id_)
        for id_, o in offers.items()
        if attribute in o and in_range(w, o)
    ]
    if not found:
        return None
    if w["func"] == "MIN":
        _, id_ = min(found)
    else:
        top = max(v for v, _ in found)
        id_ = min(i for v, i in found if v == top)
    return id_, offers[id_][attribute]


def notifies(w: dict[str, Any], last: tuple[int, Any] | None, new: tuple[int, Any] | None) -> bool:
    if last is None or new is None:
        return (last is None) != (new is None)
    move = abs(number(new[1]) - number(last[1]))
    threshold = w["threshold"]
    if threshold is None:
        return new[0] != last[0] or move != 0
    if threshold.endswith("%"):
        return move > Decimal(threshold[:-1]) / 100 * abs(number(last[1]))
    return move > Decimal(threshold)


def data(answer: tuple[int, Any] | None) -> dict[str, Any]:
    return {"offer": None} if answer is None else {"offer": answer[0], "value": answer[1]}


@settings(max_examples=300, deadline=None)
@given(flows(), st.lists(watches(), min_size=1, max_size=4), st.data())
def test_every_notification_is_a_recomputation_and_goes_out_exactly_on_a_change(flow, ws, draw):
    events = flow.events
    registered = draw.draw(st.integers(0, len(events)))  # events before it are history
    now = parse_timestamp(flow.time(registered + 1), "now")
    for w in ws:
        got = [
            (line["seq"], line["data"])
            for line in run_offline(parse_query(w["text"]), events, now=now)
        ]
        first = recompute(w, open_offers_after(events[:registered]))
        expected = [(events[registered - 1]["seq"] if registered else None, data(first))]
        last = first
        for i in range(registered, len(events)):
            new = recompute(w, open_offers_after(events[: i + 1]))
            if notifies(w, last, new):
                expected.append((events[i]["seq"], data(new)))
                last = new
            if w["threshold"] is None:
                # the last notified answer is the recomputation after every event: the same
                # offer and the same number ("1.0" and "1.00" are one value, not a change)
                assert not notifies(w, last, new)
        assert got == expected, w["text"]
