"""Running ``static/frontend/notes.js`` under node, so tests can hold the pages' script to
what the Python side says (one table through both languages)."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from tests.livestack import ROOT

NOTES_JS = ROOT / "frontend" / "static" / "frontend" / "notes.js"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="no node to run notes.js")


def notes_js(function: str, calls: list[list[Any]]) -> list[Any]:
    """What notes.js's exported ``function`` returns for each list of arguments in ``calls``
    (all in one node process), decoded from JSON."""
    script = (
        f"import {{ {function} }} from {json.dumps(NOTES_JS.as_uri())};\n"
        f"const calls = {json.dumps(calls)};\n"
        f"console.log(JSON.stringify(calls.map((args) => {function}(...args))));\n"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)
