"""How the exchange writes quantities and prices: the one home of number text (issue 16).

Services (notification rows, event payloads), the API, the admin and the web UI all write
numbers through these functions; nothing else calls ``normalize()`` or groups digits. Two
forms:

* *plain* text, what JSON carries to bots and pages: never an exponent, a quantity or a tick
  without trailing zeros (``8000``, ``2.5``, ``0.01``, not ``8E+3`` or ``2.5000000000``), a
  price with its market's number of places (``1.10`` at a tick of 0.01);
* *grouped* text, what people read: the plain text with thousands separated by commas
  (``8,000``, ``9,440.00``).

An amount of money (a spending limit, what bids commit, an exposure, a trade's total) is
shown to people with two places at least (``money_text``: ``33,100.00``, also in a market
priced in whole units, where a price reads ``30``), so that one page never writes money two
ways; a price keeps its market's places (``price_text``). JSON carries amounts as
``price_text`` writes them.

The pages' script groups no numbers itself: what arrives live in a sentence was written here
(``exchange/notification_texts.py`` renders the ``me`` frames' sentences).

Only the standard library is imported here, so every layer may import this module.
"""

from __future__ import annotations

import functools
import re
from decimal import Decimal
from typing import overload

# A plain number as this module writes it: an optional minus, ASCII digits, optional places.
# Any other text (a dash, a word, an exponent) is shown as it is by ``grouped_text``.
PLAIN_NUMBER = re.compile(r"(-?\d+)(\.\d+)?", re.ASCII)
# The places inside a run of digits where a thousands separator goes (the JS uses this too).
THOUSANDS = re.compile(r"\B(?=(\d{3})+(?!\d))", re.ASCII)
MISSING = "—"


def decimal_exponent(value: Decimal) -> int:
    """The exponent of a finite decimal (NaN and infinities have a letter there instead)."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int), f"not a finite decimal: {value!r}"
    return exponent


@functools.lru_cache(maxsize=256)  # a few ticks, asked for each price written (the log's writer)
def price_quantum(tick: Decimal) -> Decimal:
    """The smallest step prices are written with: 0.01 for a tick of 0.05, 1 for 25."""
    return Decimal(1).scaleb(min(0, decimal_exponent(tick.normalize())))


@overload
def number_text(value: Decimal | int) -> str: ...
@overload
def number_text(value: None) -> None: ...
def number_text(value: Decimal | int | None) -> str | None:
    """A quantity or tick in plain text: ``8000``, ``2.5``, ``0.01`` (the stored
    ``8000.0000000000`` and the normalized ``8E+3`` both read ``8000``); None for None."""
    if value is None:
        return None
    return format(Decimal(value).normalize(), "f")


def tick_text(tick: Decimal) -> str:
    """A tick as people and an input's ``step`` write it: 0.01, 1, 10."""
    return number_text(tick)


def price_text(value: Decimal | int | None, tick: Decimal) -> str | None:
    """A price in plain text with the market's number of places (``1.10`` at a tick of
    0.01 or 0.05, ``25`` at 25); None for None."""
    return None if value is None else format(Decimal(value).quantize(price_quantum(tick)), "f")


MONEY_QUANTUM = Decimal("0.01")


@overload
def money_text(value: Decimal | int | str) -> str: ...
@overload
def money_text(value: None) -> None: ...
def money_text(value: Decimal | int | str | None) -> str | None:
    """An amount of money in plain text with two places at least, never cut: ``33100.00``
    (from ``33100``, the stored ``33100.0000000000`` or a whole-unit market's total),
    ``2.50``, and ``1.234`` in a market priced in thousandths; None for None."""
    if value is None:
        return None
    amount = Decimal(value).normalize()
    if decimal_exponent(amount) > decimal_exponent(MONEY_QUANTUM):
        amount = amount.quantize(MONEY_QUANTUM)
    return format(amount, "f")


def grouped_text(value: object) -> str:
    """A number for people: its plain text with thousands separated (``8,000``, ``2.5``,
    ``-12,345.60``).

    A ``Decimal`` or ``int`` is written with ``number_text`` first; text is grouped as it
    stands, so a price keeps the places ``price_text`` gave it (``5500.00`` reads
    ``5,500.00``). None and "" read "—"; text that is not a plain number is returned as it is.
    """
    if value is None or value == "":
        return MISSING
    # bool is an int to Python but not a number here (the script writes it as a word too).
    if isinstance(value, Decimal | int) and not isinstance(value, bool):
        text = number_text(value)
    else:
        text = str(value)
    plain = PLAIN_NUMBER.fullmatch(text)
    if plain is None:
        return text
    whole, places = plain.group(1), plain.group(2) or ""
    return THOUSANDS.sub(",", whole) + places


def counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, the noun plural unless the count is one, the count grouped:
    ``1 auction``, ``2 auctions``, ``1,200 offers`` (regular plurals only)."""
    return f"{grouped_text(count)} {noun}{'' if count == 1 else 's'}"
