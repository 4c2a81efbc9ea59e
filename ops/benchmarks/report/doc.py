"""The report being written: its lines, and what the sections hand to one another."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops.benchmarks.templates import render


@dataclass
class Doc:
    results: dict[str, Any]
    lines: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)  # keys of the targets missed

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def fragment(self, name: str, **values: object) -> str:
        """Template ``name`` (under ``templates/report/``) filled in."""
        return render(f"report/{name}.md", **values).rstrip("\n")

    def prose(self, name: str, **values: object) -> None:
        """Template ``name`` added as a paragraph (a blank line after it)."""
        self.add(self.fragment(name, **values), "")

    def text(self) -> str:
        return "\n".join(self.lines).rstrip() + "\n"


def splice_section(report: Path, title: str, section: str) -> Path:
    """Put ``section`` (whose first line starts with ``title``) into ``report``, replacing
    the section there with that title or, if none, before *Where the missed targets lose
    their time*, else at the end: a benchmark run alone updates its part of a whole run's
    report. A section ends at the next level-2 heading or at a line that opens an HTML
    comment: the marker of a part another command writes (``ops/bench_live.py``) may
    stand just before that heading, and must stay."""
    text = report.read_text() if report.exists() else ""
    found = re.search(rf"^{re.escape(title)}.*?(?=^## |^<!-- |\Z)", text, flags=re.M | re.S)
    if found:
        text = text[: found.start()] + section + "\n" + text[found.end() :]
    else:
        anchor = text.find("\n## Where the missed targets")
        if anchor < 0:
            text = text.rstrip("\n") + "\n\n" + section
        else:
            text = text[: anchor + 1] + section + "\n" + text[anchor + 1 :]
    report.write_text(text)
    return report
