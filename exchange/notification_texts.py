"""Personal notifications as one sentence each, with a tone (good, bad or info, for its
colour): the one home of these sentences. The account and order pages show them, and the
``me`` stream sends each notification's sentence and tone in its frame, which the pages'
script only displays. Numbers arrive as plain text (``exchange.numbers``) and are grouped
here for reading.

Each sentence must be true for its recipient under its offer's pricing rule (``pricing``:
``fixed``, or the auction rule ``first`` or ``second``; rows written before it was recorded
read as ``first``), and names prices with the market's currency (``unit``) when it has one.
"""

from __future__ import annotations

from typing import Any

from exchange.numbers import PLAIN_NUMBER, grouped_text, money_text


def _bids(count: Any) -> str:
    return "1 matching bid" if count == 1 else f"{count} matching bids"


def _money(value: Any, data: dict[str, Any]) -> str:
    unit = data.get("unit")
    text = grouped_text(value)
    return f"{text} {unit}" if unit else text


def _amount(value: Any, data: dict[str, Any]) -> str:
    """An amount of money (a total, the room left): two places at least, as the pages."""
    unit = data.get("unit")
    text = grouped_text(money_text(value) if PLAIN_NUMBER.fullmatch(str(value)) else value)
    return f"{text} {unit}" if unit else text


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def _terms(data: dict[str, Any]) -> str:
    """ "8,000 pencils at 1.18 EUR, 9,440.00 EUR in all" (what a trade row knows of it)."""
    price = _money(data.get("price"), data)
    quantity = data.get("quantity")
    if not quantity:
        return f"at {price}"
    unit = data.get("quantity_unit")
    amount = f"{grouped_text(quantity)} {unit}" if unit else grouped_text(quantity)
    total = f", {_amount(data['total'], data)} in all" if data.get("total") else ""
    return f"{amount} at {price}{total}"


def note_text(kind: str, data: dict[str, Any]) -> tuple[str, str]:
    """(sentence, tone) for a notification; tone is good, bad or info (for its colour)."""
    offer = f"offer #{data.get('offer')}"
    bid = f"bid #{data.get('bid')}"
    pricing = data.get("pricing") or "first"
    best = data.get("best_value")
    if kind == "best_offer":
        if (data.get("state") or "open") != "open":
            return f"{_cap(offer)} is {data.get('state')}.", "info"
        if best is None:
            return f"No bid matches {offer} any more.", "info"
        count = _bids(data.get("matching_bids"))
        if pricing == "fixed":
            return f"A bid is first in line for {offer} at {_money(best, data)} ({count}).", "good"
        tail = (
            "; the winner pays the second-best value plus a tick, at most that"
            if pricing == "second"
            else ""
        )
        return f"Best bid on {offer} is now {_money(best, data)} ({count}){tail}.", "good"
    if kind == "best_bid":
        if pricing == "fixed":
            return f"{_cap(bid)} is first in line for {offer} at {_money(best, data)}.", "good"
        if pricing == "second":
            return (
                f"{_cap(bid)} is now the best bid on {offer}; if it wins it pays the "
                f"second-best value plus a tick, at most {_money(best, data)}.",
                "good",
            )
        return f"{_cap(bid)} is now the best bid on {offer} at {_money(best, data)}.", "good"
    if kind == "outbid":
        tail = f": the best bid is now {_money(best, data)}" if best else ""
        return f"{_cap(bid)} was outbid on {offer}{tail}.", "bad"
    if kind == "not_best":
        if data.get("status") == "unmatched":
            return f"{_cap(bid)} no longer matches {offer}.", "info"
        return (
            f"{_cap(bid)} is no longer first in line for {offer}: another bid is ahead at "
            f"{_money(best, data)}.",
            "bad",
        )
    if kind == "offer_ended":
        status = data.get("status")
        ended = "Sale ended" if pricing == "fixed" else "Auction ended"
        price = _money(data.get("price"), data)
        if status == "lost":
            if data.get("own"):
                return (
                    f"{ended}: {offer} went to your bid #{data.get('winning_bid')} at {price}; "
                    f"{bid} did not win.",
                    "info",
                )
            return (
                f"{ended}, you did not win: {offer} went to another bid at {price} ({bid}).",
                "bad",
            )
        if status == "over_limit":
            total = _amount(data["total"], data) if data.get("total") else "an unbounded amount"
            tail = (
                f"; it went to another bid at {price}" if data.get("sold") else "; it closed unsold"
            )
            return (
                f"{ended}, you did not win {offer}: {bid} would have cost {total}, more than "
                f"the {_amount(data.get('remaining'), data)} left of your spending limit{tail}.",
                "bad",
            )
        if status == "closed":
            if data.get("sold") is False:
                return f"{_cap(offer)} closed unsold.", "info"
            return f"{_cap(offer)} closed and another bid won it.", "info"
        who = {"withdrawn": " by its seller", "cancelled": " by staff"}.get(str(status), "")
        return f"{_cap(offer)} was {status}{who}: {bid} no longer matches it.", "info"
    if kind == "trade":
        if data.get("buyer"):
            return f"Sold: {offer} to {data['buyer']}, {_terms(data)}.", "good"
        if pricing == "fixed":
            return f"Bought: {bid} filled by {offer}, {_terms(data)}.", "good"
        return f"Won: {bid} won the auction of {offer}, {_terms(data)}.", "good"
    if kind == "set_aside":
        # The engine wrote the sentence (which order, why, the way out); only it knows the
        # reason, and a set-aside bid has no offer to name.
        order = f"offer #{data['offer']}" if data.get("offer") else f"bid #{data.get('bid')}"
        return str(data.get("message") or f"Your {order} is left out of matching."), "bad"
    if kind == "offer":
        state = data.get("state")
        if state == "closed" and not data.get("sold"):
            return f"{_cap(offer)} closed unsold.", "info"
        if state == "cancelled":
            return f"{_cap(offer)} was cancelled by staff.", "bad"
        return f"{_cap(offer)} is now {state}.", "info"
    return f"{kind.replace('_', ' ')} on {offer}.", "info"
