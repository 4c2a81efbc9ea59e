"""An offer's best bid: the value the matching cycle computes (``services/matching.py``),
the outbox reports when it changes (``services/notifications.py``) and verification checks
(``services/verification.py``). Its own module so that the cycle and the outbox, which both
need it, do not import each other."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Best:
    bid_id: int | None
    value: Decimal | None
    matching_bids: int


NO_BEST = Best(None, None, 0)
