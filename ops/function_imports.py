"""Every import inside a function says why it is not at the top (STYLE.md, issue 38):
``ops/test`` runs this after the import cycles, over exchange/, matching/, frontend/, ops/
and tests/.

An import in a function body (a ``def``, at any depth) needs a comment giving its reason: on
one of its own lines, or on the line just above it. A run of imports one after the other
shares the comment above its first. A comment that only silences a tool (``noqa``,
``type: ignore``, ``fmt:``) is not a reason. Imports under ``if TYPE_CHECKING:`` at module
level are not in a function and need nothing.

    .venv/bin/python ops/function_imports.py
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIRECTORIES = ("exchange", "matching", "frontend", "ops", "tests")
SKIPPED = frozenset({"migrations", "__pycache__"})

# A tool directive alone: ``noqa: E402 - the reason`` gives a reason, ``noqa: E402`` does not.
_DIRECTIVE = re.compile(
    r"noqa(:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*)?|type:\s*ignore(\[[^\]]*\])?|fmt:\s*\w+"
)


def reason_lines(source: str) -> set[int]:
    """The lines (1-based) that hold a comment saying something beyond tool directives."""
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        parts = [part.strip() for part in token.string.split("#")]
        if any(part and not _DIRECTIVE.fullmatch(part) for part in parts):
            lines.add(token.start[0])
    return lines


def unexplained(source: str) -> list[int]:
    """The first lines of the function-level imports of ``source`` that give no reason."""
    explained = reason_lines(source)
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            run_start = None  # the first line of the run of imports the statement is in
            for statement in block:
                if isinstance(statement, ast.Import | ast.ImportFrom):
                    if run_start is None:
                        run_start = statement.lineno
                    own = range(statement.lineno, (statement.end_lineno or statement.lineno) + 1)
                    if in_function and not (explained & {*own, run_start - 1}):
                        found.append(statement.lineno)
                else:
                    run_start = None
        for child in ast.iter_child_nodes(node):
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse(source), False)
    return sorted(found)


def python_files(directories: tuple[str, ...] = DIRECTORIES) -> Iterator[Path]:
    """The Python files of ``directories`` in this checkout, migrations left out."""
    for directory in directories:
        for path in sorted((ROOT / directory).rglob("*.py")):
            if not SKIPPED & set(path.relative_to(ROOT).parts):
                yield path


def main() -> int:
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: a function-level import without a reason comment"
        for path in python_files()
        for line in unexplained(path.read_text(encoding="utf-8"))
    ]
    for line in wrong:
        print(line, file=sys.stderr)
    if not wrong:
        print("every function-level import gives its reason (ops/function_imports.py)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
