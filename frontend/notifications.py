"""Personal notifications as one sentence each (static/frontend/notes.js says the same for
the ones that arrive live; keep the two in step)."""

from __future__ import annotations

from typing import Any


def _bids(count: Any) -> str:
    return "1 matching bid" if count == 1 else f"{count} matching bids"


def _quantity(data: dict[str, Any]) -> str:
    quantity = data.get("quantity")
    if not quantity:
        return "at "
    whole, _, fraction = str(quantity).partition(".")
    grouped = f"{int(whole):,}" if whole.lstrip("-").isdigit() else whole
    return f"{grouped}{'.' + fraction if fraction else ''} at "


def note_text(kind: str, data: dict[str, Any]) -> tuple[str, str]:
    """(sentence, tone) for a notification; tone is good, bad or info (for its colour)."""
    offer = f"offer #{data.get('offer')}"
    bid = f"Bid #{data.get('bid')}"
    if kind == "best_offer":
        if data.get("best_value") is None:
            return f"No bid matches {offer} any more.", "info"
        return (
            f"Best bid on {offer} is now {data['best_value']} "
            f"({_bids(data.get('matching_bids'))}).",
            "good",
        )
    if kind == "best_bid":
        return f"{bid} is now the best bid on {offer} at {data.get('best_value')}.", "good"
    if kind == "outbid":
        best = data.get("best_value")
        tail = f": the best bid is now {best}" if best else ""
        return f"{bid} was outbid on {offer}{tail}.", "bad"
    if kind == "offer_ended":
        if data.get("status") == "closed":
            return f"{offer[0].upper()}{offer[1:]} closed to another bid.", "info"
        return (
            f"{offer[0].upper()}{offer[1:]} is {data.get('status')}: {bid} no longer matches it.",
            "info",
        )
    if kind == "trade":
        terms = _quantity(data) + str(data.get("price"))
        if data.get("buyer"):
            return f"Sold: {offer} to {data['buyer']}, {terms}.", "good"
        return f"Bought: {bid} filled by {offer}, {terms}.", "good"
    if kind == "set_aside":
        # The engine wrote the sentence (which order, why, the way out); only it knows the
        # reason, and a set-aside bid has no offer to name.
        order = f"offer #{data['offer']}" if data.get("offer") else f"bid #{data.get('bid')}"
        return str(data.get("message") or f"Your {order} is left out of matching."), "bad"
    if kind == "offer":
        if data.get("state") == "closed" and not data.get("sold"):
            return f"{offer[0].upper()}{offer[1:]} closed unsold.", "info"
        return f"{offer[0].upper()}{offer[1:]} is now {data.get('state')}.", "info"
    return f"{kind.replace('_', ' ')} on {offer}.", "info"
