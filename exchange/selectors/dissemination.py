"""What the staff dashboard reads about dissemination."""

from __future__ import annotations

import json
from typing import Any, cast

from exchange.dissemination.choices import KEPT, choices_key
from exchange.redis_clients import redis_client


def dissemination_choices(*, limit: int = 100) -> list[dict[str, Any]]:
    """The optimizer's latest choices with their estimates, newest first (at most ``KEPT``)."""
    if limit < 1:
        return []
    raw = cast(list[bytes], redis_client().lrange(choices_key(), 0, min(limit, KEPT) - 1))
    return [json.loads(item) for item in raw]
