"""The ``Idempotency-Key`` header on create requests (SPEC 6.2)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from django.db import IntegrityError, transaction
from rest_framework.request import Request
from rest_framework.response import Response

from exchange.errors import ExchangeError, InvalidInput
from exchange.models import IdempotencyKey


class KeyReused(ExchangeError):
    status = 422


def _body_hash(data: object) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def idempotent(request: Request, endpoint: str, create: Callable[[], Response]) -> Response:
    """Run ``create`` once per (user, endpoint, key); a repeat gets the first response.

    The key row is written in the same transaction as what ``create`` writes, so a failed
    request leaves no key behind and may be retried; a concurrent repeat waits on the key's
    unique index until the first request has committed, then answers with its response.
    """
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return create()
    if not key or len(key) > 255 or not key.isprintable():
        raise InvalidInput(
            "invalid_idempotency_key",
            "Idempotency-Key must be 1 to 255 printable characters.",
            field="Idempotency-Key",
        )
    body_hash = _body_hash(request.data)
    lookup = {"user": request.user, "endpoint": endpoint, "key": key}
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
            return Response(row.response, status=row.status, headers={"Idempotent-Replay": "true"})
        response = create()
        row.status, row.response = response.status_code, response.data
        row.save(update_fields=["status", "response"])
    return response
