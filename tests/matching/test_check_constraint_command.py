"""``manage.py check_constraint`` (SPEC 4): the normal form one disjunct per line, or the error."""

from __future__ import annotations

import subprocess
import sys

from tests.livestack import ROOT


def run(text: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check_constraint", text],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_prints_one_disjunct_per_line():
    result = run("x > 1 AND x <= 3 OR NOT y BETWEEN 1 AND 9 OR p > 1.0 AND p <= 3.0")
    assert result.returncode == 0, result.stderr
    # int is discrete: (1, 3] is [2, 3]; decimal is dense and keeps the open bound
    assert result.stdout.splitlines() == [
        "x BETWEEN 2 AND 3",
        "y <= 0",
        "y >= 10",
        "p IN (1.0, 3.0]",
    ]


def test_an_error_names_the_position_and_exits_2():
    result = run("x = 1 AND y BETWEEN 5 AND 1")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: at character 11: ")
    assert result.stderr.splitlines()[-1] == " " * 12 + "^"
