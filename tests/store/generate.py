"""Random constraint texts for the store tests: every type and operator, small domains.

The domains are small on purpose (a handful of values per type, a few attributes)
so that a good share of generated publication/subscription pairs match and the
boundary cases (touching intervals, open versus closed bounds, touching boxes)
come up often. Texts go through ``matching.parse``, so negation, ``!=`` and the
normalizer's merging are exercised too; texts the language rejects (an empty
merge, a point or box named twice in a disjunct) are simply drawn again.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import matching
from matching.model import Constraint

STRINGS = [
    "",
    "a",
    "a b",
    "a,b",
    'q"x',
    "back\\slash",
    "it''s",
    "(p)",
    "[x]",
    "{}",
    " lead",
    "é",
    "Z",
    "zz",
]

# type name -> (attribute names, literal texts in increasing order)
DOMAINS: dict[str, tuple[list[str], list[str]]] = {
    "int": (["a", "x"], [str(v) for v in range(-1, 6)]),
    "decimal": (["p"], ["0", "0.5", "1.00", "1.5", "2", "2.50"]),
    "float": (["x", "f"], ["-1e0", "0.0e0", "5e-1", "1e0", "1.5e0", "2e0"]),
    "date": (["d"], [f"DATE '2026-01-0{d}'" for d in range(1, 6)]),
    "timestamp": (
        ["t"],
        [f"TIMESTAMP '2026-01-01T10:00:0{s}Z'" for s in range(5)]
        + ["TIMESTAMP '2026-01-01T10:00:04.5Z'"],
    ),
    "string": (["s"], ["'" + s.replace("'", "''") + "'" for s in sorted(set(STRINGS))]),
}

ORDERED = list(DOMAINS)
COORDS = ["0", "0.5", "1", "1.5", "2"]


def _two(rng: random.Random, values: list[str]) -> tuple[str, str]:
    i, j = sorted(rng.sample(range(len(values)), 2))
    return values[i], values[j]


def ordered_predicate(rng: random.Random, t: str) -> str:
    names, values = DOMAINS[t]
    name = rng.choice(names)
    head = f"{t} {name}"
    form = rng.randrange(12)
    if form == 0:
        return f"{head} = *"
    if form <= 6:
        op = ["=", "!=", "<", "<=", ">", ">="][form - 1]
        return f"{head} {op} {rng.choice(values)}"
    lo, hi = _two(rng, values)
    if form == 7:
        return f"{head} BETWEEN {lo} AND {hi}"
    if form == 8:
        return f"NOT {head} BETWEEN {lo} AND {hi}"
    if form == 9:
        return f"NOT {head} < {rng.choice(values)}"
    return f"{head} IN {rng.choice('[(')}{lo}, {hi}{rng.choice('])')}"


def _box(rng: random.Random) -> str:
    x1, x2 = sorted(rng.choice(COORDS) for _ in range(2))
    y1, y2 = sorted(rng.choice(COORDS) for _ in range(2))
    return f"BOX({x1}, {y1}, {x2}, {y2})"


def point_predicate(rng: random.Random) -> str:
    form = rng.randrange(5)
    if form == 0:
        return "point pt = *"
    if form <= 2:
        return f"point pt = POINT({rng.choice(COORDS)}, {rng.choice(COORDS)})"
    return f"point pt WITHIN {_box(rng)}"


def box_predicate(rng: random.Random) -> str:
    op = rng.choice(["= *", "=", "OVERLAPS", "CONTAINS", "WITHIN", "=", "OVERLAPS", "WITHIN"])
    if op == "= *":
        return "box bx = *"
    return f"box bx {op} {_box(rng)}"


def predicate(rng: random.Random) -> str:
    kind = rng.randrange(10)
    if kind < 7:
        return ordered_predicate(rng, ORDERED[kind % len(ORDERED)])
    if kind == 7:
        return point_predicate(rng)
    return box_predicate(rng)


def conjunction(rng: random.Random, size: int) -> str:
    parts = [predicate(rng) for _ in range(size)]
    if size > 1 and rng.random() < 0.1:
        # A negated disjunction of ordered predicates: De Morgan in the normalizer.
        t = rng.choice(ORDERED)
        parts[-1] = f"NOT ({ordered_predicate(rng, t)} OR {ordered_predicate(rng, t)})"
        if "= *" in parts[-1]:
            parts[-1] = ordered_predicate(rng, t)
    return " AND ".join(parts)


def constraint_text(rng: random.Random, *, max_predicates: int, max_disjuncts: int = 3) -> str:
    disjuncts = rng.randint(1, max_disjuncts) if rng.random() < 0.3 else 1
    parts = [conjunction(rng, rng.randint(1, max_predicates)) for _ in range(disjuncts)]
    return " OR ".join(f"({p})" for p in parts) if len(parts) > 1 else parts[0]


def constraints(
    rng: random.Random,
    count: int,
    *,
    max_predicates: int,
    text: Callable[..., str] = constraint_text,
) -> list[tuple[str, Constraint]]:
    """``count`` parsed constraints with their texts (rejected texts are drawn again)."""
    out: list[tuple[str, Constraint]] = []
    while len(out) < count:
        source = text(rng, max_predicates=max_predicates)
        try:
            out.append((source, matching.parse(source)))
        except matching.ConstraintError:
            continue
    return out
