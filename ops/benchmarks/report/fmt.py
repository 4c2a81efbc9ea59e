"""Numbers as the report prints them, and the timings read out of EXPLAIN ANALYZE plans."""

from __future__ import annotations

import re
from typing import Any

from ops.benchmarks.tables import median

DASH = "–"


def s(seconds: float | None, digits: int = 1) -> str:
    return DASH if seconds is None else f"{seconds:,.{digits}f}"


def ms(seconds: float | None) -> str:
    if seconds is None:
        return DASH
    value = seconds * 1000
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def rate(value: float | None) -> str:
    return DASH if value is None else f"{value:,.0f}"


def per_s(value: float | None) -> str:
    """A rate that may be below one per second (three significant digits under 100)."""
    if value is None:
        return DASH
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return DASH
    return f"{a / b:,.1f}×"


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def timing(plan: str, what: str) -> float | None:
    """``Planning`` or ``Execution`` time of an EXPLAIN ANALYZE text, in ms."""
    m = re.search(rf"{what} Time: ([0-9.]+) ms", plan)
    return float(m.group(1)) if m else None


def plan_times(statements: list[tuple[str, str]]) -> tuple[float, float]:
    """Planning and execution ms summed over the statements of one match."""
    planning = sum(timing(p, "Planning") or 0 for _, p in statements)
    execution = sum(timing(p, "Execution") or 0 for _, p in statements)
    return planning, execution


def range_split(e: dict[str, Any]) -> dict[str, float] | None:
    """``range``'s one statement split like the paper's phases, from its EXPLAIN ANALYZE.

    The ``counted`` CTE (hits found through the indexes and counted per disjunct pair) is
    the intermediate answer; the rest of the execution is the final aggregation. In ms.
    """
    statements = e.get("plans", {}).get("range:1")
    if not statements:
        return None
    plan = statements[0][1]
    m = re.search(r"CTE counted\s*\n\s*->\s*[^\n]*?actual time=[0-9.]+\.\.([0-9.]+)", plan)
    execution = timing(plan, "Execution")
    if m is None or execution is None:
        return None
    intermediate = float(m.group(1))
    return {"intermediate": intermediate, "final": max(execution - intermediate, 0.0)}


def plan_facts(e: dict[str, Any], strategy: str, size: int) -> str:
    """Where one match's time went: client median, then plan and execution per EXPLAIN."""
    statements = e.get("plans", {}).get(f"{strategy}:{size}")
    client = median(e, strategy, size)
    if not statements:
        return f"median {ms(client)} ms from the client (no plan recorded)."
    planning, execution = plan_times(statements)
    rest = (client or 0) * 1000 - planning - execution
    head = (
        f"median {ms(client)} ms from the client; under EXPLAIN ANALYZE its "
        f"{len(statements)} statement(s) took {planning:.2f} ms to plan and "
        f"{execution:.2f} ms to execute"
    )
    if rest > 0:
        return f"{head}, leaving about {rest:.2f} ms of round trips and client work."
    return (
        f"{head} (more than the timed runs, which reuse prepared plans and carry no "
        "instrumentation)."
    )
