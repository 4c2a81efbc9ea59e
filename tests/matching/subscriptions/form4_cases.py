"""Event builders and SPEC 8.3's two worked examples of form 4 (range-min and value-based),
shared by the evaluator's and the command's tests."""

from __future__ import annotations

from typing import Any

PENCILS = "office.supplies.pencils"


class Flow:
    """Builds a SPEC 8.1 event file one event at a time: ``seq`` 1, 2, 3, ... a minute apart
    from 10:00 on 2026-11-20."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def time(self, seq: int) -> str:
        return f"2026-11-20T{10 + (seq - 1) // 60:02d}:{(seq - 1) % 60:02d}:00Z"

    def add(self, type_: str, subject: str = PENCILS, **attributes: Any) -> int:
        seq = len(self.events) + 1
        self.events.append(
            {"seq": seq, "time": self.time(seq), "type": type_, "subject": subject, **attributes}
        )
        return seq

    def post(self, offer: int, ask: str, subject: str = PENCILS, **terms: Any) -> int:
        return self.add("offer_posted", subject, offer=offer, version=1, ask=ask,
                        constraint="lot = 1", **terms)  # fmt: skip

    def amend(self, offer: int, ask: str, subject: str = PENCILS, **terms: Any) -> int:
        return self.add("offer_amended", subject, offer=offer, version=2, ask=ask,
                        constraint="lot = 1", **terms)  # fmt: skip

    def best(self, offer: int, value: str | None, bids: int, subject: str = PENCILS) -> int:
        value_part = {} if value is None else {"value": value}
        return self.add("best_offer", subject, offer=offer, matching_bids=bids, **value_part)

    def end(self, offer: int, how: str = "offer_withdrawn", subject: str = PENCILS) -> int:
        extra = {"outcome": "unsold"} if how == "offer_closed" else {}
        return self.add(how, subject, offer=offer, **extra)


RANGE_MIN_QUERY = (
    f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}' "
    "AND quantity_max BETWEEN 2000 AND 10000"
)


def range_min_flow() -> Flow:
    """Offers 1 (1.00, 5,000), 2 (0.95, 20,000), 3 (0.90, 1,000); offer 4 posted at 0.97
    with 8,000 (seq 4), then withdrawn (seq 5)."""
    f = Flow()
    f.post(1, "1.00", quantity_min=1000, quantity_max=5000)
    f.post(2, "0.95", quantity_min=1000, quantity_max=20000)
    f.post(3, "0.90", quantity_min=100, quantity_max=1000)
    f.post(4, "0.97", quantity_min=1000, quantity_max=8000)
    f.end(4)
    return f


VALUE_QUERY = "SELECT best_value FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY 5%"


def value_flow() -> Flow:
    """Offer 1 posted (seq 1), then best values none, 1.00, 1.04, 1.06, 1.12, none (2-7)."""
    f = Flow()
    f.post(1, "0.90")
    for bids, value in enumerate([None, "1.00", "1.04", "1.06", "1.12", None]):
        f.best(1, value, 0 if value is None else bids)
    return f
