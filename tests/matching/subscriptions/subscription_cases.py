"""The events of SPEC 8.3's worked examples, shared by the evaluator's and the command's tests."""

from __future__ import annotations

SUBJECT = "office.supplies.pencils"
TRADE_TIMES = ["10:00", "10:05", "10:10", "10:20", "10:40", "10:50"]
TRADE_PRICES = ["1.00", "1.10", "0.90", "1.20", "1.30", "1.25"]


def at(hhmm: str) -> str:
    return f"2026-11-20T{hhmm}:00Z"


TRADES = [
    {
        "seq": i + 1,
        "time": at(t),
        "type": "trade",
        "subject": SUBJECT,
        "offer": 1,
        "trade": i + 1,
        "price": p,
        "quantity": 100,
    }
    for i, (t, p) in enumerate(zip(TRADE_TIMES, TRADE_PRICES, strict=True))
]

# SPEC 8.3's composite example: a trade at 1.10, then offers 7 (same subject) and 8 (another).
COMPOSITE = [
    {"seq": 1, "time": at("10:00"), "type": "trade", "subject": SUBJECT, "offer": 3,
     "trade": 1, "price": "1.10", "quantity": 100},
    {"seq": 2, "time": at("10:01"), "type": "offer_posted", "subject": SUBJECT, "offer": 7,
     "version": 1, "ask": "1.00", "constraint": "lot = 100"},
    {"seq": 3, "time": at("10:02"), "type": "offer_posted", "subject": "office.supplies.pens",
     "offer": 8, "version": 1, "ask": "1.00", "constraint": "lot = 100"},
]  # fmt: skip

# (query, --now or None, expected [(seq, data)])
EXAMPLES = [
    (
        "SELECT price WHERE type = 'trade', price > 1.00",
        None,
        [(2, {"price": "1.10"}), (4, {"price": "1.20"}), (5, {"price": "1.30"}),
         (6, {"price": "1.25"})],
    ),
    (
        "SELECT price WHERE type = 'trade', price > 1.00, start_time = NOW - 25m",
        at("10:30"),
        [(2, {"price": "1.10"}), (4, {"price": "1.20"}), (5, {"price": "1.30"}),
         (6, {"price": "1.25"})],
    ),
    (
        "SELECT AVG(price, 2) WHERE type = 'trade'",
        None,
        [(2, {"AVG(price, 2)": "1.05000000"}), (4, {"AVG(price, 2)": "1.05000000"}),
         (6, {"AVG(price, 2)": "1.27500000"})],
    ),
    (
        "SELECT price WHERE type = 'trade' HAVING AVG(price, 3) > 1.05",
        None,
        [(2, {"price": "1.10"}), (3, {"price": "0.90"}), (4, {"price": "1.20"}),
         (5, {"price": "1.30"}), (6, {"price": "1.25"})],
    ),
    (
        "SELECT price WHERE type = 'trade' HAVING AVG(price, 3) > 1.05 RESET",
        None,
        [(2, {"price": "1.10"}), (3, {"price": "0.90"}), (4, {"price": "1.20"})],
    ),
]  # fmt: skip

COMPOSITE_QUERY = (
    "SELECT b.offer FROM a AND b WHERE a.type = 'trade', a.price >= 1.05, "
    "b.type = 'offer_posted', b.subject = a.subject"
)
