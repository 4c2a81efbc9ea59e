"""The report being written: its lines, and what the sections hand to one another."""

from __future__ import annotations

from dataclasses import dataclass, field
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
