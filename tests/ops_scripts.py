"""The checks of ops/ that ``ops/test`` runs as scripts, loaded for their functions or run
as ``ops/test`` runs them (tests/test_import_cycles.py, tests/test_function_imports.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

from tests.livestack import ROOT


def load(name: str) -> ModuleType:
    """``ops/<name>.py`` as a module (ops/ is a directory of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "ops" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(name: str) -> subprocess.CompletedProcess[str]:
    """``ops/<name>.py`` run on this checkout, its output captured."""
    return subprocess.run(
        [sys.executable, str(ROOT / "ops" / f"{name}.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
