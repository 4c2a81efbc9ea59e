"""The plain definition of a stateless subscription's match, read literally (no index)."""

from __future__ import annotations

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


def brute(subs: dict[int, tuple[Any, tuple]], event: dict[str, Any]) -> set[int]:
    out = set()
    for sid, (pattern, tests) in subs.items():
        subject = event.get("subject")
        if pattern is not None and (subject is None or not pattern.matches(subject)):
            continue
        if all(holds(pred, event.get(attr)) for attr, pred in tests):
            out.add(sid)
    return out
