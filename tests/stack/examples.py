"""The example bots (``ops/examples/<name>.py``) loaded as modules, for tests that call their
parts without a server."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.livestack import ROOT

EXAMPLES = ROOT / "ops" / "examples"


def load_example(name: str) -> ModuleType:
    """The bot ``name`` as a module, loaded as running the script loads it: with its own
    folder first on the import path, where its ``_client.py`` is."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(EXAMPLES))
    return module
