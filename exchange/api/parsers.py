"""The API reads JSON only, and reads it with its work bounded (size, then nesting)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from exchange.http import json_bounded


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser with the limits of ``exchange.http.json_bounded``: an oversize body
    gets a JSON 413 after reading one byte more than the limit, never the whole body; a
    deeply nested one a 400 before ``json.loads`` could recurse."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        raw = stream.read(settings.JSON_MAX_BYTES + 1) if stream is not None else b""
        return json_bounded(raw)
