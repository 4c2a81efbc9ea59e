"""Unknown query parameters are a 400 on every API read (issue 22): ``?markte=`` must not
quietly answer with everything. The reads are found in the URL conf, so a new endpoint is
covered without being listed here; each read's accepted parameters are exactly the ones the
served schema documents."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.urls import URLPattern, URLResolver, reverse
from django.urls.resolvers import RoutePattern
from drf_spectacular.generators import SchemaGenerator

from exchange.api import urls as api_urls
from exchange.api.parameters import accepted_parameters
from exchange.services.subscriptions import subscription_create

pytestmark = pytest.mark.django_db

# drf-spectacular's own pages (the schema and its viewer) take its parameters (lang, format).
NOT_OURS = {"schema", "docs"}


@dataclass(frozen=True)
class Read:
    """An API read found in the URL conf: its name, its whole route below ``api/v1/`` and
    the view class serving it."""

    name: str
    route: str
    view_class: type

    @property
    def url_arguments(self) -> list[str]:
        return list(RoutePattern(self.route).converters)


def _routes(patterns, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    """Each route with its whole path, through the ``include()`` groups."""
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _routes(entry.url_patterns, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


def _reads() -> list[Read]:
    found = []
    for route, pattern in _routes(api_urls.urlpatterns):
        view_class = getattr(pattern.callback, "view_class", None)
        if pattern.name in NOT_OURS or view_class is None or not hasattr(view_class, "get"):
            continue
        found.append(Read(pattern.name, route, view_class))
    return found


def _each_read() -> list:
    return [pytest.param(r, id=r.name) for r in _reads()]


def _url(read: Read, world) -> str:
    values = {
        "subject": world["market"].subject,
        "offer_id": world["offer"].pk,
        "bid_id": world["bid"].pk,
    }
    if "subscription_id" in read.url_arguments:
        buyer = world["bid"].buyer
        values["subscription_id"] = subscription_create(
            owner=buyer, query="SELECT price WHERE type = 'trade'"
        ).pk
    kwargs = {name: values[name] for name in read.url_arguments}
    return reverse(f"api:{read.name}", kwargs=kwargs)


def _accepted(read: Read) -> list[str]:
    view = read.view_class()
    view.request = None
    return accepted_parameters(view)


def _good_query(names: list[str], world) -> dict[str, str]:
    """A right value for each parameter (the others name a market or a pattern)."""
    values = {
        "state": "open",
        "after": "0",
        "limit": "5",
        "offset": "0",
        "format": "json",
        "type": "trade",
        "since": "2020-01-01T00:00:00Z",
        "until": "2100-01-01T00:00:00Z",
    }
    return {name: values.get(name, world["market"].subject) for name in names}


def refused(name: str, taken: str) -> dict:
    """The 400's body for an unknown parameter ``name`` where ``taken`` are accepted."""
    return {
        "error": {
            "code": "unknown_parameter",
            "message": f"This endpoint has no query parameter {name!r}; it takes {taken}.",
            "field": name,
        }
    }


def test_every_read_of_the_api_is_found():
    names = {p.name for p in _reads()}
    assert {"markets", "market", "offers", "offer", "bids", "bid", "best-offers"} <= names
    assert {"trades", "notifications", "presence", "subscription-notifications"} <= names


@pytest.mark.parametrize("read", _each_read())
def test_a_misspelt_parameter_is_refused_and_named(read, world):
    client = world["clients"]["buyer"]  # the bid's owner: every read answers it
    url, accepted = _url(read, world), _accepted(read)
    good = _good_query(accepted, world)
    assert client.get(url, good).status_code == 200

    response = client.get(url, {**good, "markte": "office.supplies.pencils"})

    assert response.status_code == 400
    assert response.json() == refused("markte", ", ".join(accepted))


def test_search_on_markets_is_refused_rather_than_ignored(world):
    response = world["clients"]["anonymous"].get("/api/v1/markets/?search=pencil")

    assert response.status_code == 400
    assert response.json() == refused("search", "subject, limit, offset, format")


def test_the_first_unknown_parameter_is_named(world):
    response = world["clients"]["anonymous"].get("/api/v1/offers/?state=open&b=1&a=2")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "b"


def test_an_anonymous_caller_hears_401_before_the_parameter(world):
    response = world["clients"]["anonymous"].get("/api/v1/bids/?markte=x")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_a_format_other_than_json_is_a_400_not_a_404(world):
    client = world["clients"]["anonymous"]
    assert client.get("/api/v1/markets/?format=json").status_code == 200

    response = client.get("/api/v1/markets/?format=xml")

    assert response.status_code == 400
    assert response.json() == {
        "error": {"code": "invalid_format", "message": "format is json here.", "field": "format"}
    }


def test_writes_keep_ignoring_the_query_string(world):
    """Only reads are checked: a write's input is its body (and SPEC 6.5 keeps it stable)."""
    bid = {"market": world["market"].subject, "constraint": "lot = 5 AND price <= 1.20"}

    response = world["clients"]["buyer"].post("/api/v1/bids/?via=bot", bid, format="json")

    assert response.status_code == 201
    assert response.json()["constraint"] == "lot = 5 AND price <= 1.20"


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


@pytest.mark.parametrize("read", _each_read())
def test_the_schema_documents_exactly_the_accepted_parameters(read, schema, world):
    path = "/api/v1/" + read.route.replace("<str:", "{").replace(">", "}")
    documented = [
        p["name"] for p in schema["paths"][path]["get"].get("parameters", []) if p["in"] == "query"
    ]

    assert sorted(documented) == sorted(_accepted(read))
    response = world["clients"]["buyer"].get(_url(read, world), _good_query(documented, world))
    assert response.status_code == 200


def test_the_event_log_refuses_a_misspelt_filter_rather_than_answering_with_everything(world):
    """``?subjet=`` would otherwise read every subject's events (the three events reads: the
    JSON page, the streamed CSV and JSONL, and the types)."""
    client = world["clients"]["anonymous"]
    taken = "subject, type, after, since, until, limit, format"

    for query in ("subjet=office.>", "format=csv&subjet=office.>", "format=jsonl&subjet=x"):
        response = client.get(f"/api/v1/events/?{query}")

        assert response.status_code == 400
        assert response.json() == refused("subjet", taken)
    response = client.get("/api/v1/events/types/?type=trade")
    assert response.status_code == 400
    assert response.json() == refused("type", "format")


def test_the_event_log_still_streams_its_own_formats(world):
    client = world["clients"]["anonymous"]

    csv_response = client.get("/api/v1/events/?format=csv&subject=office.>")
    lines_response = client.get("/api/v1/events/?format=jsonl&type=trade")
    bad = client.get("/api/v1/events/?format=xml")

    assert csv_response.status_code == 200
    assert csv_response["Content-Type"] == "text/csv"
    assert lines_response.status_code == 200
    assert lines_response["Content-Type"] == "application/x-ndjson"
    assert bad.status_code == 400
    assert bad.json()["error"] == {
        "code": "invalid_format",
        "message": "format is json, csv or jsonl.",
        "field": "format",
    }


def test_the_schema_lists_the_event_formats(schema):
    parameters = schema["paths"]["/api/v1/events/"]["get"]["parameters"]

    formats = [p for p in parameters if p["name"] == "format"]

    assert len(formats) == 1
    assert formats[0]["schema"]["enum"] == ["csv", "json", "jsonl"]
