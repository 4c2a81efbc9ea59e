"""Events and queries for form 3 (SPEC 8.3 patterns): two markets, trades and best offers.

Pencils (P) and pens (Q) trade in between; offers 5 and 6 on pencils change their best
value. Offer 6's best value is absent at ``seq`` 17 (no bid matches then).
"""

from __future__ import annotations

from typing import Any

P, Q = "office.supplies.pencils", "office.supplies.pens"


def _event(seq: int, hhmm: str, subject: str, **attrs: Any) -> dict[str, Any]:
    if "price" in attrs:
        base = {"type": "trade", "offer": 1, "trade": seq, "quantity": 100}
    else:
        base = {"type": "best_offer", "matching_bids": 1}
    return {"seq": seq, "time": f"2026-11-20T{hhmm}:00Z", "subject": subject, **base, **attrs}


MARKETS = [
    _event(1, "10:00", P, price="1.00"),
    _event(2, "10:02", Q, price="2.00"),
    _event(3, "10:05", P, price="1.10"),
    _event(4, "10:06", P, offer=5, value="3.00"),
    _event(5, "10:08", Q, price="2.20"),
    _event(6, "10:10", P, price="0.90"),
    _event(7, "10:11", P, offer=5, value="2.90"),
    _event(8, "10:12", P, offer=6, value="4.00"),
    _event(9, "10:13", P, offer=5, value="2.80"),
    _event(10, "10:15", P, offer=5, value="2.70"),
    _event(11, "10:20", P, price="1.20"),
    _event(12, "10:25", Q, price="1.90"),
    _event(13, "10:40", P, price="1.30"),
    _event(14, "10:41", P, offer=6, value="3.90"),
    _event(15, "10:45", P, offer=6, value="3.80"),
    _event(16, "10:50", P, price="1.25"),
    _event(17, "10:51", P, offer=6, matching_bids=0),
    _event(18, "10:52", P, offer=6, value="3.70"),
    _event(19, "10:55", Q, price="2.40"),
    _event(20, "10:56", P, offer=6, value="3.60"),
]

T = "FILTER{type = 'trade'}(EVENTS)"
B = "FILTER{type = 'best_offer'}(EVENTS)"

# SPEC 8.3 form 3's four examples: (what, query, [(seq, data)]) over MARKETS.
FOUR_EXAMPLES = [
    (
        "a trade above 1.00, then the next trade on the same market below 0.95",
        "SELECT a.price, b.price FROM FILTER{type = 'trade' AND price > 1.00}(EVENTS) AS a "
        f"NEXT{{b.subject = a.subject AND b.price < 0.95}} {T} AS b",
        # pencils 1.10 (seq 3) is followed on pencils by 0.90; the pens never fall that low
        [(6, {"a.price": "1.10", "b.price": "0.90"})],
    ),
    (
        "a trade, then the next trade on the same market more than 5% higher",
        f"SELECT a.price, b.price FROM {T} AS a "
        f"NEXT{{b.subject = a.subject AND b.price > 1.05 * a.price}} {T} AS b",
        [
            (3, {"a.price": "1.00", "b.price": "1.10"}),
            (5, {"a.price": "2.00", "b.price": "2.20"}),
            # 1.10 skips 0.90 (not 5% higher) and takes 1.20, as 0.90 does
            (11, {"a.price": "1.10", "b.price": "1.20"}),
            (11, {"a.price": "0.90", "b.price": "1.20"}),
            (13, {"a.price": "1.20", "b.price": "1.30"}),
            # pens: 2.20 skips 1.90; both complete at seq 19, ordered by their first seq
            (19, {"a.price": "2.20", "b.price": "2.40"}),
            (19, {"a.price": "1.90", "b.price": "2.40"}),
        ],
    ),
    (
        "prices rising trade after trade for at least 30 minutes",
        f"SELECT a.price, b.price, n, DUR FROM {T} AS a "
        f"FOLD{{b.subject = a.subject, b.price >= b.last.price, COUNT AS n}} {T} AS b "
        "WHERE DUR >= 30m",
        [
            # pencils 0.90 (10:10), 1.20, 1.30 (10:40); 1.25 then ends the rise
            (13, {"a.price": "0.90", "b.price": "1.30", "n": 2, "DUR": "1800"}),
            # pens 1.90 (10:25) to 2.40 (10:55), the pencils trades in between skipped
            (19, {"a.price": "1.90", "b.price": "2.40", "n": 1, "DUR": "1800"}),
        ],
    ),
    (
        "the best value of an offer fell three times in a row within 10 minutes",
        f"SELECT a.offer, a.value, b.value, n, start, end FROM {B} AS a "
        f"FOLD{{b.offer = a.offer, b.value < b.last.value, COUNT AS n}} {B} AS b "
        "WHERE n = 3 WITHIN 10m",
        # offer 5: 3.00, 2.90, 2.80, 2.70 in 9 minutes. Offer 6 falls from 4.00 only after
        # 29 minutes (dropped by WITHIN), and its run from 3.90 ends where the value is absent.
        [
            (
                10,
                {
                    "a.offer": 5,
                    "a.value": "3.00",
                    "b.value": "2.70",
                    "n": 3,
                    "start": "2026-11-20T10:06:00Z",
                    "end": "2026-11-20T10:15:00Z",
                },
            )
        ],
    ),
]
