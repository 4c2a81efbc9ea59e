"""Reading a workload directory back: its manifest and its constraints.

The text files are the workload (they are what ``match_files`` reads), but
``matching.parse`` handles a few tens of thousands of constraints a second, and a
large-intermediate constraint at a million subscriptions has eighteen terms. So each
kind has a decoder that builds, from the exact text the generator writes, the
constraint ``matching.parse`` would return, with shared attribute and predicate
objects. A line the decoder does not recognise goes through ``matching.parse``; and
the first ``CHECK_FIRST`` lines and every ``CHECK_EVERY``-th line are parsed as well
and compared, so that a decoder that drifted from the parser fails loudly instead of
loading something else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import matching
from matching.model import Attribute, Box, BoxEq, BoxOverlaps, Constraint, Disjunct, Interval, Type

from .generate import MANIFEST, SIDES, WorkloadError
from .parameters import Workload, fixed_top, proportional_top

CHECK_FIRST = 100
CHECK_EVERY = 997  # prime: the checked lines do not line up with any pattern of ids

Item = tuple[int, Constraint]
Decoder = Callable[[str], Constraint | None]


def read_manifest(directory: Path | str) -> dict[str, Any]:
    path = Path(directory) / MANIFEST
    try:
        manifest: dict[str, Any] = json.loads(path.read_text())
        return manifest
    except FileNotFoundError:
        raise WorkloadError(
            f"{directory} is not a workload directory (no {MANIFEST}): "
            "make one with `manage.py workload generate`"
        ) from None


def workload_of(manifest: dict[str, Any]) -> Workload:
    w = manifest["workload"]
    return Workload(w["kind"], w["subs"], w["pubs"], w["seed"])


def _single(attribute: Attribute, pred: Any) -> Constraint:
    return Constraint((Disjunct(((attribute, pred),)),))


def _equality_decoder() -> Decoder:
    x = Attribute("x", Type.INT)
    prefix = "int x = "
    cut = len(prefix)

    def decode(text: str) -> Constraint | None:
        value = text[cut:]
        if not text.startswith(prefix) or not value.isdigit() or not value.isascii():
            return None
        r = int(value)
        return _single(x, Interval(r, True, r, True))

    return decode


def _conjunction_decoder(n: int) -> Decoder:
    # Position k accepts exactly the texts of term k; anything else is parsed.
    table: list[dict[str, tuple[Attribute, Interval]]] = []
    for k in range(1, n + 1):
        attribute = Attribute(f"x{k}", Type.INT)
        table.append({f"int x{k} = {r}": (attribute, Interval(r, True, r, True)) for r in (0, 1)})

    def decode(text: str) -> Constraint | None:
        parts = text.split(" AND ")
        if len(parts) != n:
            return None
        try:
            items = tuple([table[k][part] for k, part in enumerate(parts)])
        except KeyError:
            return None
        return Constraint((Disjunct(items),))

    return decode


_BOX = re.compile(
    r"box b (OVERLAPS|=) BOX\(([0-9]+\.[0-9]+), ([0-9]+\.[0-9]+), ([0-9]+\.[0-9]+), ([0-9]+\.[0-9]+)\)"
)


def _box_decoder() -> Decoder:
    b = Attribute("b", Type.BOX)
    kinds = {"OVERLAPS": BoxOverlaps, "=": BoxEq}

    def decode(text: str) -> Constraint | None:
        m = _BOX.fullmatch(text)
        if m is None:
            return None
        x1, y1, x2, y2 = (float(m.group(i)) for i in range(2, 6))
        if x1 > x2 or y1 > y2:
            return None
        return _single(b, kinds[m.group(1)](Box(x1, y1, x2, y2)))

    return decode


def decoder(w: Workload) -> Decoder:
    """The fast decoder of the texts the generator writes for ``w``."""
    if w.kind in ("fixed", "proportional"):
        return _equality_decoder()
    if w.kind == "large_intermediate":
        return _conjunction_decoder(int(w.parameters()["terms"]))
    return _box_decoder()


def distinct_texts(w: Workload) -> int | None:
    """How many different constraint texts ``w`` can have (None: as many as rows)."""
    if w.kind == "fixed":
        return fixed_top(w.subs, w.pubs)
    if w.kind == "proportional":
        return proportional_top(w.pubs)
    if w.kind == "large_intermediate":
        return 1 << int(w.parameters()["terms"])
    return None


def _memoized(fast: Decoder) -> Decoder:
    memo: dict[str, Constraint | None] = {}

    def decode(text: str) -> Constraint | None:
        found = memo.get(text)
        if found is None:
            found = memo[text] = fast(text)
        return found

    return decode


def iter_items(directory: Path | str, side: str) -> Iterator[Item]:
    """The ``(id, constraint)`` pairs of one side's text file, in file order.

    Where the workload repeats texts (a million subscriptions of the fixed workload
    draw from 200,000 values) each text is decoded once and its constraint shared:
    constraints are immutable.
    """
    if side not in SIDES:
        raise ValueError(f"side is one of {SIDES}, not {side!r}")
    directory = Path(directory)
    w = workload_of(read_manifest(directory))
    fast = decoder(w)
    rows = w.pubs if side == "pubs" else w.subs
    distinct = distinct_texts(w)
    decode = _memoized(fast) if distinct is not None and distinct < rows else fast
    path = directory / f"{side}.txt"
    with open(path, encoding="utf-8") as lines:
        seen = 0
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            text_id, _, text = line.partition("\t")
            try:
                i = int(text_id)
            except ValueError:
                raise WorkloadError(
                    f"{path}:{number}: the id {text_id!r} is not an integer"
                ) from None
            constraint = decode(text)
            if constraint is None or seen < CHECK_FIRST or seen % CHECK_EVERY == 0:
                try:
                    parsed = matching.parse(text)
                except matching.ConstraintError as exc:
                    raise WorkloadError(f"{path}:{number}: {exc.message}") from None
                if constraint is not None and constraint != parsed:
                    raise WorkloadError(
                        f"{path}:{number}: the fast decoder read {constraint!r}, "
                        f"matching.parse reads {parsed!r}"
                    )
                constraint = parsed
            seen += 1
            yield i, constraint
