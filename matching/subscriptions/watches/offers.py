"""The open offers that form 4 watches (SPEC 8.3), built from SPEC 8.1 events.

``OFFER_SCHEMA`` is what a watch may name; ``OpenOffers`` replays offer and
``best_offer`` events into the current set, following SPEC 8.3's fine points:

* ``offer_posted`` opens the offer with its terms, no best value and ``matching_bids``
  0 (a second ``offer_posted`` for an open offer starts it afresh the same way);
* ``offer_amended`` replaces the terms (an attribute the event lacks becomes absent) and
  keeps the best value and the bid count until the next ``best_offer``; an amendment
  of an offer the file never opened opens it, since only open offers are amended and a
  file may start after the posting;
* ``offer_withdrawn``, ``offer_cancelled`` and ``offer_closed`` remove it;
* ``best_offer`` sets ``best_value`` (absent when the event has no ``value``) and
  ``matching_bids`` of an open offer (one without ``matching_bids`` keeps the count),
  and is ignored for any other offer;
* every other event leaves the set as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from matching import Type, Value
from matching.subscriptions.events import Event

OFFER_SCHEMA = MappingProxyType(
    {
        "offer": Type.INT,
        "subject": Type.STRING,
        "ask": Type.DECIMAL,
        "quantity_min": Type.DECIMAL,
        "quantity_max": Type.DECIMAL,
        "closes_at": Type.TIMESTAMP,
        "best_value": Type.DECIMAL,
        "matching_bids": Type.INT,
    }
)
NUMERIC_ATTRIBUTES = frozenset(
    name for name, t in OFFER_SCHEMA.items() if t in (Type.INT, Type.DECIMAL)
)

# The terms an offer event carries, by the offer attribute's name (the same in both).
_TERMS = ("subject", "ask", "quantity_min", "quantity_max", "closes_at")
_ENDS = frozenset({"offer_withdrawn", "offer_cancelled", "offer_closed"})
# The only event types ``OpenOffers.apply`` changes the set for (the rest leave it as it
# is): a registered watch need not be pushed any other (``multi.SubscriptionSet``).
CHANGING = frozenset({"offer_posted", "offer_amended", "best_offer", *_ENDS})


@dataclass
class OpenOffer:
    """One open offer: ``values`` typed (what tests compare), ``shown`` as the events
    carried them (what notifications show). Both hold the same keys."""

    values: dict[str, Value] = field(default_factory=dict)
    shown: dict[str, Any] = field(default_factory=dict)

    def set(self, name: str, value: Value, shown: Any) -> None:
        self.values[name] = value
        self.shown[name] = shown

    def drop(self, name: str) -> None:
        self.values.pop(name, None)
        self.shown.pop(name, None)


class OpenOffers:
    """The open offers by id, changed one event at a time by ``apply``."""

    def __init__(self) -> None:
        self.offers: dict[int, OpenOffer] = {}

    def get(self, offer: int) -> OpenOffer | None:
        return self.offers.get(offer)

    def copy(self) -> OpenOffers:
        """A copy that ``apply`` may change without changing this one (``best_offer``
        changes a row in place)."""
        other = OpenOffers()
        other.offers = {
            offer: OpenOffer(dict(row.values), dict(row.shown))
            for offer, row in self.offers.items()
        }
        return other

    def apply(self, e: Event) -> int | None:
        """Applies one event; the id of the offer it changed (opened, changed or removed),
        or ``None`` when the set is unchanged."""
        kind = e.values.get("type")
        offer_id = e.values.get("offer")
        if not isinstance(offer_id, int):
            return None
        if kind == "offer_posted" or kind == "offer_amended":
            old = self.offers.get(offer_id)
            row = OpenOffer()
            row.set("offer", offer_id, e.raw["offer"])
            for name in _TERMS:
                if name in e.values:
                    row.set(name, e.values[name], e.raw[name])
            if kind == "offer_amended" and old is not None:
                for name in ("best_value", "matching_bids"):
                    if name in old.values:
                        row.set(name, old.values[name], old.shown[name])
            else:
                row.set("matching_bids", 0, 0)
            self.offers[offer_id] = row
            return offer_id
        if kind in _ENDS:
            return offer_id if self.offers.pop(offer_id, None) is not None else None
        if kind == "best_offer":
            best = self.offers.get(offer_id)
            if best is None:
                return None
            if "value" in e.values:
                best.set("best_value", e.values["value"], e.raw["value"])
            else:
                best.drop("best_value")
            if "matching_bids" in e.values:
                best.set("matching_bids", e.values["matching_bids"], e.raw["matching_bids"])
            return offer_id
        return None
