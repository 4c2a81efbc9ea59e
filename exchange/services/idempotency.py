"""Create requests that carry an ``Idempotency-Key`` (SPEC 6.2): the one place that writes
``IdempotencyKey`` rows. The API layer reads the header and shapes the HTTP answer; this
service decides whether the create runs, and keeps its first answer."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from exchange.errors import ExchangeError
from exchange.models import IdempotencyKey

Created = TypeVar("Created")


class KeyReused(ExchangeError):
    status = 422


@dataclass(frozen=True)
class FirstAnswer:
    """The answer given to the first request with the key, given again to a repeat."""

    status: int
    data: Any


def _body_hash(data: object) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def idempotency_key_use(
    *,
    user: User,
    endpoint: str,
    key: str,
    body: object,
    create: Callable[[], Created],
    answer_of: Callable[[Created], FirstAnswer],
) -> Created | FirstAnswer:
    """Run ``create`` once per (user, endpoint, key) and return what it returned; a repeat
    with the same ``body`` gets the first answer (``answer_of`` what ``create`` returned)
    without running it; the same key with another body is a ``KeyReused`` 422.

    The key row is written in the same transaction as what ``create`` writes, so a failed
    request leaves no key behind and may be retried; a concurrent repeat waits on the key's
    unique index until the first request has committed, then gets its answer.
    """
    body_hash = _body_hash(body)
    lookup = {"user": user, "endpoint": endpoint, "key": key}
    with transaction.atomic():
        try:
            with transaction.atomic():
                row = IdempotencyKey.objects.create(**lookup, body_hash=body_hash)
        except IntegrityError:
            row = IdempotencyKey.objects.select_for_update().get(**lookup)
            if row.body_hash != body_hash:
                raise KeyReused(
                    "idempotency_key_reused",
                    "This Idempotency-Key was used with a different body; use a new key.",
                    field="Idempotency-Key",
                ) from None
            assert row.status is not None  # written in the transaction that created the row
            return FirstAnswer(row.status, row.response)
        created = create()
        answer = answer_of(created)
        row.status, row.response = answer.status, answer.data
        row.save(update_fields=["status", "response"])
    return created
