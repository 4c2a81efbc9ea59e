"""docs/adapters.md shows the sample maps as they are in fixtures/legacy/."""

from __future__ import annotations

import json
import re

from tests.livestack import ROOT

from .conftest import LEGACY

DOC = (ROOT / "docs" / "adapters.md").read_text()


def test_the_maps_in_the_doc_are_the_sample_maps():
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", DOC, re.DOTALL)]
    maps = [
        json.loads((LEGACY / name).read_text())
        for name in ("pencils-price-list.map.json", "pencils-bids.map.json")
    ]
    assert blocks[:2] == maps
