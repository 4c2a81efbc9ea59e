"""The end-to-end benchmark run alone (``ops/bench --live-only``) put into a whole run's report.

Only its parts change: its two rows of the targets table, its sections (*End to end* and,
with a sustained-load run, *Sustained load*) and its line under *Where the missed targets
lose their time*, which goes when both its targets are met. Everything else the full run
wrote (seed 000's figures, the Spark matcher, the other benchmarks) stays as it was.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .doc import Doc, splice_section
from .live import SECTIONS, section, why_live
from .targets import live_rows

# A row of the targets table written by ``live_rows``; its explanation under the misses.
ROW = re.compile(r"^\| end to end, .*\n?", re.M)
WHY = re.compile(r"^\* \*\*End to end at .*\n?", re.M)
MISSES = "## Where the missed targets lose their time"


def splice(report: Path, results: dict[str, Any]) -> Path:
    """Put the parts of ``results`` (``live``, and ``load`` if it has one) into ``report``."""
    doc = Doc(results)
    live_rows(doc, results["live"])
    text = _replace(report.read_text(), ROW, "".join(f"{row}\n" for row in doc.lines))
    missed = any(key.startswith("live_") for key in doc.misses)
    why = f"{why_live(doc, results['live'])}\n" if missed else ""
    if WHY.search(text) or not missed:
        text = _replace(text, WHY, why)
    elif MISSES in text:
        heading = text.index(MISSES) + len(MISSES) + 2  # past its blank line
        text = text[:heading] + why + text[heading:]
    text = _drop_empty(text, MISSES)
    report.write_text(text)
    for key, title in SECTIONS:
        if results.get(key):
            part = Doc(results)
            section(part, results[key], title)
            splice_section(report, f"## {title}", part.text())
    return report


def _replace(text: str, pattern: re.Pattern[str], new: str) -> str:
    """``text`` with the first line matching ``pattern`` replaced by ``new`` (any number of
    lines, or none) and the other matching lines removed; unchanged if none matches."""
    found = list(pattern.finditer(text))
    if not found:
        return text
    for match in reversed(found[1:]):
        text = text[: match.start()] + text[match.end() :]
    first = found[0]
    return text[: first.start()] + new + text[first.end() :]


def _drop_empty(text: str, heading: str) -> str:
    """``text`` without the section ``heading`` if nothing but blank lines is left in it."""
    found = re.search(rf"^{re.escape(heading)}\n(.*?)(?=^## |^<!-- |\Z)", text, flags=re.M | re.S)
    if found and not found.group(1).strip():
        return text[: found.start()] + text[found.end() :]
    return text
