"""``/api/v1/subscriptions/`` (SPEC 8.3): the shapes, bad queries, ownership, limits."""

from __future__ import annotations

import pytest

from exchange.models import Subscription, SubscriptionNotification
from exchange.services import subscriptions as service
from tests.api.conftest import client_for
from tests.factories import UserFactory
from tests.subscriptions.log import advance, append, trade

pytestmark = pytest.mark.django_db

URL = "/api/v1/subscriptions/"


def test_post_registers_a_subscription_with_its_canonical_query():
    # Given a user and a log with three events
    alice = UserFactory(username="alice")
    append([trade("1.00"), trade("1.10"), trade("0.90")])

    # When she registers a query written loosely
    response = client_for(alice).post(
        URL, {"query": "select price where type='trade' and price>1", "name": "dear"}, format="json"
    )

    # Then 201 with SPEC 8.3's fields, the query in canonical text, the seam at seq 3
    assert response.status_code == 201
    body = response.json()
    row = Subscription.objects.get()
    assert body == {
        "id": row.pk,
        "name": "dear",
        "kind": "events",
        "query": "SELECT price WHERE type = 'trade', price > 1",
        "state": "active",
        "reason": "",
        "created_at": body["created_at"],
        "now": body["now"],
        "last_n": 0,
        "stream": f"sub:{row.pk}",
        "webhook": None,
    }
    assert body["created_at"] == body["now"]
    assert (row.owner, row.seam, row.cursor) == (alice, 3, 3)  # future only: no history


@pytest.mark.parametrize(
    ("query", "code", "position"),
    [
        ("SELECT price WHERE", "syntax", 18),
        ("SELECT colour WHERE type = 'trade'", "unknown_attribute", 7),
        ("SELECT price WHERE price > 'x'", None, 27),
        # well formed, but no event has this type (issue 39)
        ("SELECT * WHERE type = 'trades'", "never_matches", 22),
    ],
)
def test_a_bad_query_is_a_400_with_code_message_and_position_and_nothing_is_stored(
    query, code, position
):
    alice = UserFactory(username="alice")
    response = client_for(alice).post(URL, {"query": query}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["position"] == position
    assert error["field"] == "query"
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    assert Subscription.objects.count() == 0


@pytest.mark.parametrize(
    "body",
    [{}, {"query": 5}, {"query": "SELECT *", "name": "x" * 101}, {"query": ["SELECT *"]}],
)
def test_a_malformed_body_is_a_400_and_nothing_is_stored(body):
    response = client_for(UserFactory()).post(URL, body, format="json")
    assert response.status_code == 400
    assert set(response.json()["error"]) >= {"code", "message"}
    assert Subscription.objects.count() == 0


def test_anonymous_callers_are_refused():
    assert client_for(None).post(URL, {"query": "SELECT *"}, format="json").status_code == 401
    assert client_for(None).get(URL).status_code == 401


def test_each_user_sees_only_their_own():
    # Given alice's and bob's subscriptions
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    mine = client_for(alice).post(URL, {"query": "SELECT *"}, format="json").json()
    theirs = client_for(bob).post(URL, {"query": "SELECT price"}, format="json").json()

    # Then each lists and shows only their own; the other's is a 404 everywhere
    listed = client_for(alice).get(URL).json()
    assert [s["id"] for s in listed["results"]] == [mine["id"]]
    assert client_for(alice).get(f"{URL}{mine['id']}/").json() == {**mine, "behind_events": 0}
    for path in ("", "notifications/"):
        assert client_for(alice).get(f"{URL}{theirs['id']}/{path}").status_code == 404
    assert client_for(alice).delete(f"{URL}{theirs['id']}/").status_code == 404
    assert Subscription.objects.get(pk=theirs["id"]).state == "active"
    for bad in ("x", "-1", "99999999999999999999", "٣"):
        assert client_for(alice).get(f"{URL}{bad}/").status_code == 404


def test_delete_ends_it_and_keeps_its_outbox():
    alice = UserFactory(username="alice")
    client = client_for(alice)
    created = client.post(URL, {"query": "SELECT price WHERE type = 'trade'"}, format="json")
    sid = created.json()["id"]
    append([trade("1.00")])
    advance(Subscription.objects.get(pk=sid))

    response = client.delete(f"{URL}{sid}/")

    assert response.status_code == 200
    assert (response.json()["state"], response.json()["reason"]) == ("done", "deleted")
    row = Subscription.objects.get(pk=sid)
    assert row.evaluator is None
    # Nothing more is sent: a later event is not read
    append([trade("1.20")])
    advance(row)
    page = client.get(f"{URL}{sid}/notifications/").json()
    assert page == {"results": [{"n": 1, "seq": 1, "data": {"price": "1.00"}}], "next": None}
    # Deleting again changes nothing
    again = client.delete(f"{URL}{sid}/")
    assert again.status_code == 200 and again.json()["reason"] == "deleted"


def test_at_most_max_active_subscriptions_per_user(monkeypatch):
    monkeypatch.setattr(service, "MAX_ACTIVE", 2)
    alice = UserFactory(username="alice")
    client = client_for(alice)
    ids = [client.post(URL, {"query": "SELECT *"}, format="json").json()["id"] for _ in range(2)]

    refused = client.post(URL, {"query": "SELECT *"}, format="json")

    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "too_many_subscriptions"
    assert Subscription.objects.count() == 2
    # An ended one no longer counts; another user has a limit of their own
    client.delete(f"{URL}{ids[0]}/")
    assert client.post(URL, {"query": "SELECT *"}, format="json").status_code == 201
    assert (
        client_for(UserFactory()).post(URL, {"query": "SELECT *"}, format="json").status_code == 201
    )


def test_notifications_page_by_n_after_a_whole_number():
    # Given a subscription with five notifications
    alice = UserFactory(username="alice")
    client = client_for(alice)
    sid = client.post(URL, {"query": "SELECT price WHERE type = 'trade'"}, format="json").json()[
        "id"
    ]
    append([trade(p) for p in ("1.00", "1.01", "1.02", "1.03", "1.04")])
    advance(Subscription.objects.get(pk=sid))
    assert SubscriptionNotification.objects.count() == 5

    # When she reads two at a time after n = 1
    first = client.get(f"{URL}{sid}/notifications/?after=1&limit=2").json()
    assert [r["n"] for r in first["results"]] == [2, 3]
    assert first["next"].endswith(f"/api/v1/subscriptions/{sid}/notifications/?after=3&limit=2")
    second = client.get(first["next"]).json()
    assert [(r["n"], r["seq"], r["data"]) for r in second["results"]] == [
        (4, 4, {"price": "1.03"}),
        (5, 5, {"price": "1.04"}),
    ]
    assert client.get(second["next"]).json() == {"results": [], "next": None}
    assert (
        client.get(f"{URL}{sid}/notifications/?after=9223372036854775807").json()["results"] == []
    )

    # A bad after is a clear 400
    for bad in ("-1", "x", "1.5", "99999999999999999999"):
        error = client.get(f"{URL}{sid}/notifications/?after={bad}").json()["error"]
        assert (error["code"], error["field"]) == ("invalid_after", "after")


def test_the_list_and_the_outbox_cost_a_fixed_number_of_queries(django_assert_max_num_queries):
    alice = UserFactory(username="alice")
    client = client_for(alice)
    ids = [
        client.post(URL, {"query": "SELECT price"}, format="json").json()["id"] for _ in range(5)
    ]
    append([trade(p) for p in ("1.00", "1.01", "1.02")])
    for sid in ids:
        advance(Subscription.objects.get(pk=sid))

    # token, count, page; token, the subscription, the page
    with django_assert_max_num_queries(3):
        assert len(client.get(URL).json()["results"]) == 5
    with django_assert_max_num_queries(3):
        assert len(client.get(f"{URL}{ids[0]}/notifications/").json()["results"]) == 3
