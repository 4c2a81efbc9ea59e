"""The naive loop: every subscription tested against the event, the plain definition read
literally. The tests' oracle for the tree and the benchmark's baseline."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from matching import Wildcard


def holds(pred: Any, v: Any) -> bool:
    """The plain definition of one test: absent fails, ``*`` is presence, else the bounds."""
    if v is None:
        return False
    if isinstance(pred, Wildcard):
        return True
    if pred.lo is not None and not (v > pred.lo or (pred.lo_closed and v == pred.lo)):
        return False
    return pred.hi is None or v < pred.hi or (pred.hi_closed and v == pred.hi)


def brute(
    subs: Mapping[Hashable, tuple[Any, Iterable[tuple[str, Any]]]], event: Mapping[str, Any]
) -> set[Hashable]:
    """The ids of ``subs`` (id -> (pattern or ``None``, tests)) whose tests all hold."""
    out = set()
    for sid, (pattern, tests) in subs.items():
        subject = event.get("subject")
        if pattern is not None and (subject is None or not pattern.matches(subject)):
            continue
        if all(holds(pred, event.get(attr)) for attr, pred in tests):
            out.add(sid)
    return out
