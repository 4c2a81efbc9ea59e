"""``idempotency_key_use``: the create runs once per (user, endpoint, key), a repeat gets
the first answer without running it, another body is refused and changes nothing, and a
failed create leaves no key behind."""

from __future__ import annotations

import pytest

from exchange.errors import InvalidInput
from exchange.models import IdempotencyKey
from exchange.services.idempotency import FirstAnswer, KeyReused, idempotency_key_use
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def use(user, *, key="k", body=None, endpoint="bids", fail=False):
    runs = []

    def create():
        runs.append(1)
        if fail:
            raise InvalidInput("bad", "no")
        return {"id": len(IdempotencyKey.objects.all())}

    result = idempotency_key_use(
        user=user,
        endpoint=endpoint,
        key=key,
        body=body if body is not None else {"constraint": "lot = 1"},
        create=create,
        answer_of=lambda created: FirstAnswer(201, created),
    )
    return result, len(runs)


def test_a_repeat_gets_the_first_answer_without_running_again():
    alice = UserFactory()

    assert use(alice) == ({"id": 1}, 1)
    assert use(alice) == (FirstAnswer(201, {"id": 1}), 0)
    row = IdempotencyKey.objects.get()
    assert (row.user, row.endpoint, row.key, row.status, row.response) == (
        alice,
        "bids",
        "k",
        201,
        {"id": 1},
    )


def test_keys_are_per_user_and_per_endpoint():
    alice, bob = UserFactory(), UserFactory()
    use(alice)

    assert use(bob) == ({"id": 2}, 1)
    assert use(alice, endpoint="offers") == ({"id": 3}, 1)
    assert IdempotencyKey.objects.count() == 3


def test_the_same_key_with_another_body_is_refused_and_changes_nothing():
    alice = UserFactory()
    use(alice)

    with pytest.raises(KeyReused) as raised:
        use(alice, body={"constraint": "lot = 2"})

    assert (raised.value.status, raised.value.code, raised.value.field) == (
        422,
        "idempotency_key_reused",
        "Idempotency-Key",
    )
    assert list(IdempotencyKey.objects.values_list("response", flat=True)) == [{"id": 1}]


def test_a_failed_create_leaves_the_key_free():
    alice = UserFactory()

    with pytest.raises(InvalidInput):
        use(alice, fail=True)

    assert not IdempotencyKey.objects.exists()
    assert use(alice) == ({"id": 1}, 1)
