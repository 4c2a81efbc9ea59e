"""``POST /api/v1/subscriptions/check/`` (issue 39, item 4): a query checked as registering
would check it, nothing written; a subject or pattern no market matches yet is a warning
(it may be registered all the same), every form's, negated tests aside."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from exchange.models import Subscription
from tests.api.conftest import client_for
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db

URL = "/api/v1/subscriptions/check/"
T = "FILTER{type = 'trade'}(EVENTS)"


def _check(query: str):
    return client_for(UserFactory()).post(URL, {"query": query}, format="json")


def _no_market(query: str, pattern: str, message: str) -> dict:
    return {"code": "no_market", "message": message, "position": query.index(f"'{pattern}'")}


def test_a_query_whose_subjects_all_have_markets_has_no_warning():
    pencils_market()
    query = "select price where type='trade', subject matches 'office.>'"
    response = _check(query)
    assert response.status_code == 200
    assert response.json() == {
        "query": "SELECT price WHERE type = 'trade', subject MATCHES 'office.>'",
        "kind": "events",
        "warnings": [],
    }
    assert Subscription.objects.count() == 0


@pytest.mark.parametrize(
    ("query", "pattern", "kind"),
    [
        # form 1, the pattern in a disjunct beside one that matches
        (
            "SELECT price WHERE type = 'trade', "
            "(subject MATCHES 'tools.>' OR subject = 'office.supplies.pencils')",
            "tools.>",
            "events",
        ),
        # form 2
        (
            "SELECT a.price FROM a AND b WHERE a.subject MATCHES 'tools.*', b.type = 'trade'",
            "tools.*",
            "composite",
        ),
        # form 3, in a step's condition
        (
            f"SELECT a.price FROM {T} AS a "
            f"NEXT{{b.subject = a.subject AND b.subject MATCHES 'tools.>'}} {T} AS b",
            "tools.>",
            "pattern",
        ),
        # form 4
        ("SELECT MIN(ask) FROM offers WHERE subject MATCHES 'tools.>'", "tools.>", "state"),
    ],
)
def test_a_pattern_no_market_matches_is_a_warning_in_every_form(query, pattern, kind):
    pencils_market()
    response = _check(query)
    assert response.status_code == 200
    body = response.json()
    assert body["kind"] == kind
    assert body["warnings"] == [
        _no_market(
            query,
            pattern,
            f"No market's subject matches '{pattern}' yet: this subscription notifies nothing "
            "until one does.",
        )
    ]
    assert Subscription.objects.count() == 0


def test_a_misspelt_subject_gets_the_nearest_and_a_negated_pattern_no_warning():
    pencils_market()
    query = (
        "SELECT price WHERE subject = 'office.supplies.pencil', "
        "(NOT subject MATCHES 'garden.>'), subject != 'garden.hoses'"
    )
    assert _check(query).json()["warnings"] == [
        _no_market(
            query,
            "office.supplies.pencil",
            "No market has subject 'office.supplies.pencil' yet: this subscription notifies "
            "nothing until one does. Did you mean 'office.supplies.pencils'?",
        )
    ]


def test_a_subject_no_market_could_have_says_so():
    query = "SELECT price WHERE subject = 'Office Pencils'"
    assert _check(query).json()["warnings"] == [
        _no_market(
            query,
            "Office Pencils",
            "'Office Pencils' is not a market subject (lowercase letters and digits in tokens "
            "separated by '.'), so no market will ever match it.",
        )
    ]


def test_a_bad_query_is_the_error_registering_would_give_and_anonymous_is_refused():
    response = _check("SELECT * WHERE type = 'trades'")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["position"], error["field"]) == ("never_matches", 22, "query")
    assert _check("").status_code == 400
    assert APIClient().post(URL, {"query": "SELECT *"}, format="json").status_code == 401
    assert Subscription.objects.count() == 0


def test_registering_a_warned_query_is_allowed():
    query = "SELECT price WHERE subject MATCHES 'tools.>'"
    response = client_for(UserFactory()).post(
        "/api/v1/subscriptions/", {"query": query}, format="json"
    )
    assert response.status_code == 201
    assert Subscription.objects.get().query == query
