"""``POST /api/v1/subscriptions/<id>/pause/`` and ``.../resume/``: a paused subscription
keeps its place in the log and is not advanced; resumed, it catches up from there, each
event once. Owner only; an ended one is a 409 and stays as it was."""

from __future__ import annotations

import pytest

from exchange.models import Subscription, SubscriptionNotification
from exchange.redis_clients import redis_client
from exchange.services import subscriptions as service
from exchange.services.subscriptions import ENGINE_WAKE_CHANNEL, WAKE_SUBSCRIPTIONS
from tests.api.conftest import client_for
from tests.factories import UserFactory
from tests.subscriptions.log import advance, append, offline, outbox, trade

pytestmark = pytest.mark.django_db

URL = "/api/v1/subscriptions/"
QUERY = "SELECT price WHERE type = 'trade'"


def _row(sid: int) -> tuple:
    """What must not change on a refused request."""
    row = Subscription.objects.get(pk=sid)
    return (row.state, row.reason, row.cursor, row.last_n, bytes(row.evaluator or b""))


def _advance_all() -> None:
    """The subscription engine's batches, until none is left to read."""
    advance()


def test_paused_it_is_not_advanced_and_resumed_it_catches_up_each_event_once():
    # Given alice's subscription that has sent two notifications
    alice = UserFactory(username="alice")
    client = client_for(alice)
    sid = client.post(URL, {"query": QUERY}, format="json").json()["id"]
    append([trade("1.00"), trade("1.10")])
    _advance_all()
    assert [note["n"] for note in outbox(Subscription.objects.get(pk=sid))] == [1, 2]

    # When she pauses it and three trades are appended
    paused = client.post(f"{URL}{sid}/pause/")
    append([trade("1.20"), trade("0.90"), trade("1.30")])
    _advance_all()

    # Then it says paused everywhere and has read nothing more
    assert paused.status_code == 200
    assert (paused.json()["state"], paused.json()["last_n"]) == ("paused", 2)
    assert client.get(f"{URL}{sid}/").json()["state"] == "paused"
    assert [s["state"] for s in client.get(URL).json()["results"]] == ["paused"]
    row = Subscription.objects.get(pk=sid)
    assert (row.cursor, row.last_n, row.evaluator is not None) == (2, 2, True)
    assert SubscriptionNotification.objects.filter(subscription_id=sid).count() == 2

    # When she resumes it and one more trade comes after
    resumed = client.post(f"{URL}{sid}/resume/")
    _advance_all()
    append([trade("1.40")])
    _advance_all()

    # Then the pause's three trades arrive then the later one, numbered on: no gap, no repeat
    assert resumed.status_code == 200
    assert resumed.json()["state"] == "active"
    row = Subscription.objects.get(pk=sid)
    lines = outbox(row)
    assert [(line["n"], line["seq"], line["data"]) for line in lines] == [
        (1, 1, {"price": "1.00"}),
        (2, 2, {"price": "1.10"}),
        (3, 3, {"price": "1.20"}),
        (4, 4, {"price": "0.90"}),
        (5, 5, {"price": "1.30"}),
        (6, 6, {"price": "1.40"}),
    ]
    # and exactly what the offline contract sends for the same registration
    assert [(line["seq"], line["data"]) for line in lines] == [
        (line["seq"], line["data"]) for line in offline(row)
    ]


def test_pause_and_resume_are_idempotent():
    alice = UserFactory(username="alice")
    client = client_for(alice)
    sid = client.post(URL, {"query": QUERY}, format="json").json()["id"]

    # Resuming an active one and pausing a paused one change nothing
    assert client.post(f"{URL}{sid}/resume/").json()["state"] == "active"
    assert client.post(f"{URL}{sid}/pause/").json()["state"] == "paused"
    before = _row(sid)
    again = client.post(f"{URL}{sid}/pause/")
    assert (again.status_code, again.json()["state"]) == (200, "paused")
    assert _row(sid) == before


@pytest.mark.parametrize(
    ("state", "reason", "code"),
    [
        ("done", "deleted", "subscription_done"),
        ("done", "completed", "subscription_done"),
        ("suspended", "state_limit", "subscription_suspended"),
        ("suspended", "error", "subscription_suspended"),
    ],
)
@pytest.mark.parametrize("action", ["pause", "resume"])
def test_an_ended_subscription_is_a_409_and_stays_as_it_was(action, state, reason, code):
    alice = UserFactory(username="alice")
    client = client_for(alice)
    sid = client.post(URL, {"query": QUERY}, format="json").json()["id"]
    Subscription.objects.filter(pk=sid).update(state=state, reason=reason, evaluator=None)
    before = _row(sid)

    response = client.post(f"{URL}{sid}/{action}/")

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == code
    assert f"is {state} ({reason})" in error["message"]
    assert _row(sid) == before


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_only_the_owner_may_pause_or_resume(action):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    sid = client_for(alice).post(URL, {"query": QUERY}, format="json").json()["id"]
    if action == "resume":
        client_for(alice).post(f"{URL}{sid}/pause/")
    before = _row(sid)

    # Another user gets a 404 as if it did not exist; anonymous callers a 401
    assert client_for(bob).post(f"{URL}{sid}/{action}/").status_code == 404
    assert client_for(None).post(f"{URL}{sid}/{action}/").status_code == 401
    for bad in ("x", "-1", "99999999999999999999"):
        assert client_for(alice).post(f"{URL}{bad}/{action}/").status_code == 404
    # and GET is not a way to do it
    assert client_for(alice).get(f"{URL}{sid}/{action}/").status_code == 405
    assert _row(sid) == before


def test_a_paused_subscription_can_be_deleted():
    alice = UserFactory(username="alice")
    client = client_for(alice)
    sid = client.post(URL, {"query": QUERY}, format="json").json()["id"]
    client.post(f"{URL}{sid}/pause/")

    deleted = client.delete(f"{URL}{sid}/")

    assert (deleted.json()["state"], deleted.json()["reason"]) == ("done", "deleted")
    assert Subscription.objects.get(pk=sid).evaluator is None
    refused = client.post(f"{URL}{sid}/resume/")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "subscription_done")


def test_a_paused_subscription_counts_toward_the_limit(monkeypatch):
    monkeypatch.setattr(service, "MAX_ACTIVE", 1)
    alice = UserFactory(username="alice")
    client = client_for(alice)
    sid = client.post(URL, {"query": QUERY}, format="json").json()["id"]
    client.post(f"{URL}{sid}/pause/")

    refused = client.post(URL, {"query": "SELECT *"}, format="json")

    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "too_many_subscriptions")
    assert Subscription.objects.count() == 1


def test_pause_and_resume_wake_the_engine_after_commit(django_capture_on_commit_callbacks):
    alice = UserFactory(username="alice")
    client = client_for(alice)
    sid = client.post(URL, {"query": QUERY}, format="json").json()["id"]
    pubsub = redis_client().pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(ENGINE_WAKE_CHANNEL)
    try:
        pubsub.get_message(timeout=1.0)  # the subscription's confirmation
        for action in ("pause", "resume"):
            with django_capture_on_commit_callbacks(execute=True):
                client.post(f"{URL}{sid}/{action}/")
            message = pubsub.get_message(timeout=5.0)
            assert message is not None and message["data"] == WAKE_SUBSCRIPTIONS
    finally:
        pubsub.close()
