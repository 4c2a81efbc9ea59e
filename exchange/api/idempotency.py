"""The ``Idempotency-Key`` header on create requests (SPEC 6.2): read and checked here, the
rows written by ``exchange.services.idempotency``."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from rest_framework.request import Request
from rest_framework.response import Response

from exchange.errors import InvalidInput
from exchange.services.idempotency import FirstAnswer, idempotency_key_use


def _answer(response: Response) -> FirstAnswer:
    return FirstAnswer(response.status_code, response.data)


def idempotent(request: Request, endpoint: str, create: Callable[[], Response]) -> Response:
    """Run ``create`` once per (user, endpoint, key); a repeat gets the first response,
    marked ``Idempotent-Replay: true``. Without the header, ``create`` simply runs."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return create()
    if not key or len(key) > 255 or not key.isprintable():
        raise InvalidInput(
            "invalid_idempotency_key",
            "Idempotency-Key must be 1 to 255 printable characters.",
            field="Idempotency-Key",
        )
    user = request.user
    assert isinstance(user, User)  # creates need a signed-in user (the views' permissions)
    result = idempotency_key_use(
        user=user,
        endpoint=endpoint,
        key=key,
        body=request.data,
        create=create,
        answer_of=_answer,
    )
    if isinstance(result, FirstAnswer):
        return Response(result.data, status=result.status, headers={"Idempotent-Replay": "true"})
    return result
