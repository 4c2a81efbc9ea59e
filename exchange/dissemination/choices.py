"""The optimizer's choices in a bounded Redis list, newest first, so that any process can
record them and the staff dashboard can read them (``exchange.selectors.dissemination``)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from exchange.redis_clients import redis_client

KEPT = 1000


def choices_key() -> str:
    """Under the channel layer's prefix, which test runs make unique."""
    return f"{settings.CHANNEL_LAYERS['default']['CONFIG']['prefix']}:dissemination:choices"


def choice_record(entry: dict[str, Any]) -> None:
    """Keeps ``entry`` (an ``Optimizer`` log entry) and drops all but the newest ``KEPT``;
    a sink for ``Optimizer(sink=...)``."""
    choices_record([entry])


def choices_record(entries: list[dict[str, Any]]) -> None:
    """Keeps ``entries``, oldest first, in one round trip (the newest ``KEPT`` stay)."""
    if not entries:
        return
    pipe = redis_client().pipeline()
    pipe.lpush(choices_key(), *(json.dumps(e) for e in entries))
    pipe.ltrim(choices_key(), 0, KEPT - 1)
    pipe.execute()
