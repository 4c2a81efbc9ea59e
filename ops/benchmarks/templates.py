"""The prose of the benchmark reports: ``string.Template`` files under ``templates/``, filled
with numbers the caller formats from a results file."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from string import Template

TEMPLATES = Path(__file__).resolve().parent / "templates"


@cache
def template(name: str) -> Template:
    return Template((TEMPLATES / name).read_text())


def render(name: str, **values: object) -> str:
    """Template ``name`` filled with ``values``; a placeholder left without a value is a
    ``KeyError`` naming it, never a report with ``$x`` in it."""
    return template(name).substitute({key: str(value) for key, value in values.items()})
