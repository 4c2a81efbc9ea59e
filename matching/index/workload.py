"""A generated workload of stateless subscriptions and events, for the index's counts test
and its benchmark (``ops/benchmarks/index.py``). Deterministic for a given seed.

Subjects are three tokens, ``s<i>.c<j>.m<k>`` (20 sectors, 50 classes per sector, 100
markets per class: 100,000 markets). A subscription is a subject pattern and its tests:

* 70%: one market (``s3.c17.m42``), ``type = ...`` and a range on ``price``;
* 15%: every market of a class (``s3.c17.*``), ``type = ...``, a range, and half of them
  also ``offer = ...``;
* 5%: one market number across a sector's classes (``s3.*.m42``), ``type`` and a range;
* 10%: a whole sector (``s3.>``), ``type = ...``, ``offer = ...`` and a range.

A range is ``price > x`` or ``price >= x`` (40%), ``price < x`` or ``price <= x`` (40%) or
``price BETWEEN x AND y`` (20%), with prices in 0.50 to 1.50 by cents. Events are trades
on uniformly drawn markets with a type, an offer number and a price drawn the same way.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from matching import Interval
from matching.subjects import SubjectPattern, compile_pattern

from .tree import IndexTest

SECTORS, CLASSES, MARKETS = 20, 50, 100
TYPES = ("trade", "offer_posted", "offer_amended", "offer_withdrawn", "best_offer", "closed")
OFFERS = 1_000
PRICES = [Decimal(cents) / 100 for cents in range(50, 151)]

Subscription = tuple[SubjectPattern, tuple[IndexTest, ...]]


def _eq(v: Any) -> Interval:
    return Interval(v, True, v, True)


def _range(rng: random.Random) -> Interval:
    roll = rng.random()
    if roll < 0.4:
        return Interval(rng.choice(PRICES), rng.random() < 0.5, None, False)
    if roll < 0.8:
        return Interval(None, False, rng.choice(PRICES), rng.random() < 0.5)
    lo, hi = sorted(rng.sample(PRICES, 2))
    return Interval(lo, True, hi, True)


def subscriptions(n: int, seed: int = 4) -> Iterator[Subscription]:
    """``n`` subscriptions: ``(pattern, tests)``, tests in the order type, offer, price."""
    rng = random.Random(seed)
    patterns: dict[str, SubjectPattern] = {}
    for _ in range(n):
        s, c, m = rng.randrange(SECTORS), rng.randrange(CLASSES), rng.randrange(MARKETS)
        roll = rng.random()
        tests: list[IndexTest] = [("type", _eq(rng.choice(TYPES)))]
        if roll < 0.70:
            text = f"s{s}.c{c}.m{m}"
        elif roll < 0.85:
            text = f"s{s}.c{c}.*"
            if rng.random() < 0.5:
                tests.append(("offer", _eq(rng.randrange(OFFERS))))
        elif roll < 0.90:
            text = f"s{s}.*.m{m}"
        else:
            text = f"s{s}.>"
            tests.append(("offer", _eq(rng.randrange(OFFERS))))
        tests.append(("price", _range(rng)))
        pattern = patterns.get(text)
        if pattern is None:
            pattern = patterns[text] = compile_pattern(text)
        yield pattern, tuple(tests)


def events(n: int, seed: int = 8) -> list[dict[str, Any]]:
    """``n`` events as typed attribute maps (what ``MatchingIndex.match`` reads)."""
    rng = random.Random(seed)
    return [
        {
            "subject": f"s{rng.randrange(SECTORS)}.c{rng.randrange(CLASSES)}"
            f".m{rng.randrange(MARKETS)}",
            "type": rng.choice(TYPES),
            "offer": rng.randrange(OFFERS),
            "price": rng.choice(PRICES),
        }
        for _ in range(n)
    ]
