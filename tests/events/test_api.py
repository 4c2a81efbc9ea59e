"""``GET /api/v1/events/`` and ``/events/types/`` (SPEC 8.1): filters, pages by seq,
visibility per role, csv and jsonl streamed in constant memory, clear errors."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import tracemalloc

import pytest

from exchange.models import Event
from exchange.services.events import events_insert
from exchange.services.markets import market_create
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish, offer_withdraw
from matching.subscriptions.language.schema import EVENT_TYPES
from tests.api.conftest import client_for
from tests.factories import PENCILS_SCHEMA, StaffFactory, UserFactory, pencils_market

pytestmark = pytest.mark.django_db


@pytest.fixture
def log():
    """Two markets; a seller's offers, alice's and bob's bids; seq 1-7."""
    pencils = pencils_market()
    pens = market_create(
        subject="office.supplies.pens",
        title="Pens",
        schema=PENCILS_SCHEMA,
        tick="0.01",
        pricing="first",
    )
    seller, alice, bob = (
        UserFactory(username="seller"),
        UserFactory(username="alice"),
        UserFactory(username="bob"),
    )
    offer = offer_publish(seller=seller, market=pencils, constraint="lot = 10 AND price >= 1.00")
    bid_place(buyer=alice, market=pencils, constraint="lot = 10 AND price <= 1.50")
    matching_cycle_run()  # 1 offer_posted, 2 bid_placed (alice), 3 best_offer
    pen = offer_publish(seller=seller, market=pens, constraint="lot = 5 AND price >= 2.00")
    bid_place(buyer=bob, market=pens, constraint="lot = 5 AND price <= 1.00")
    matching_cycle_run()  # 4 offer_posted (pens), 5 bid_placed (bob)
    offer_withdraw(seller=seller, offer_id=pen.pk)
    matching_cycle_run()  # 6 offer_withdrawn
    offer_withdraw(seller=seller, offer_id=offer.pk)
    matching_cycle_run()  # 7 offer_withdrawn, 8 best_offer (none)
    users = {
        "seller": seller,
        "alice": alice,
        "bob": bob,
        "staff": StaffFactory(),
        "anonymous": None,
    }
    return {name: client_for(user) for name, user in users.items()}


def seqs(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [e["seq"] for e in response.json()["results"]]


def test_each_role_reads_what_it_may_see(log):
    assert seqs(log["staff"].get("/api/v1/events/")) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert seqs(log["alice"].get("/api/v1/events/")) == [1, 2, 3, 4, 6, 7, 8]
    assert seqs(log["bob"].get("/api/v1/events/")) == [1, 3, 4, 5, 6, 7, 8]
    assert seqs(log["seller"].get("/api/v1/events/")) == [1, 3, 4, 6, 7, 8]
    assert seqs(log["anonymous"].get("/api/v1/events/")) == [1, 3, 4, 6, 7, 8]


def test_filters_by_subject_pattern_type_and_after(log):
    staff = log["staff"]
    assert seqs(staff.get("/api/v1/events/?subject=office.supplies.pens")) == [4, 5, 6]
    assert seqs(staff.get("/api/v1/events/?subject=office.*.pencils")) == [1, 2, 3, 7, 8]
    assert seqs(staff.get("/api/v1/events/?subject=office.>")) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert seqs(staff.get("/api/v1/events/?subject=office")) == []
    assert seqs(staff.get("/api/v1/events/?type=offer_withdrawn,best_offer")) == [3, 6, 7, 8]
    assert seqs(staff.get("/api/v1/events/?type=bid_placed&type=offer_posted&after=2")) == [4, 5]
    event = staff.get("/api/v1/events/?after=2&limit=1").json()["results"][0]
    assert event == {
        "seq": 3,
        "time": event["time"],
        "type": "best_offer",
        "subject": "office.supplies.pencils",
        "offer": event["offer"],
        "value": "1.50",
        "matching_bids": 1,
    }


def test_since_and_until_bound_time():
    Event.objects.all().delete()
    base = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
    events_insert(
        [
            (("offer_withdrawn", "a.b", None, {"offer": i}), base + dt.timedelta(hours=i))
            for i in range(4)
        ],
        first_seq=1,
    )
    client = client_for(None)
    got = seqs(client.get("/api/v1/events/?since=2026-11-20T11:00:00Z&until=2026-11-20T13:00:00Z"))
    assert got == [2, 3]
    assert seqs(client.get("/api/v1/events/?since=2026-11-20T12:00:00%2B01:00")) == [2, 3, 4]


def test_pages_go_by_seq(log):
    first = log["staff"].get(
        "/api/v1/events/?limit=3&type=offer_posted,offer_withdrawn,best_offer,bid_placed"
    )
    assert seqs(first) == [1, 2, 3]
    following = first.json()["next"]
    assert following.endswith("after=3") or "after=3" in following
    second = log["staff"].get(following)
    assert seqs(second) == [4, 5, 6]
    third = log["staff"].get(second.json()["next"])
    assert seqs(third) == [7, 8] and third.json()["next"] is None


@pytest.mark.parametrize(
    "query, code, field, position",
    [
        ("subject=office.", "invalid_subject", "subject", 7),
        ("subject=>.x", "invalid_subject", "subject", 0),
        ("type=trades", "unknown_type", "type", None),
        ("after=-1", "invalid_after", "after", None),
        ("limit=x", "invalid_limit", "limit", None),
        ("since=yesterday", "invalid_since", "since", None),
        ("until=2026-13-01T00:00:00Z", "invalid_until", "until", None),
        ("format=xml", "invalid_format", "format", None),
    ],
)
def test_bad_input_is_a_clear_400(log, query, code, field, position):
    response = log["anonymous"].get(f"/api/v1/events/?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error.get("field"), error.get("position")) == (code, field, position)


def test_jsonl_and_csv_hold_the_same_rows(log):
    jsonl = log["staff"].get("/api/v1/events/?format=jsonl&subject=office.supplies.pencils")
    assert jsonl["Content-Type"] == "application/x-ndjson"
    rows = [json.loads(line) for line in b"".join(jsonl.streaming_content).decode().splitlines()]
    page = log["staff"].get("/api/v1/events/?subject=office.supplies.pencils").json()["results"]
    assert rows == page
    text = b"".join(
        log["staff"]
        .get("/api/v1/events/?format=csv&subject=office.supplies.pencils")
        .streaming_content
    ).decode()
    table = list(csv.DictReader(io.StringIO(text)))
    assert [r["seq"] for r in table] == [str(r["seq"]) for r in rows]
    assert table[2]["value"] == "1.50" and table[0]["value"] == "" and table[0]["ask"] == "1.00"
    # anonymous streams see only public rows
    anonymous = b"".join(log["anonymous"].get("/api/v1/events/?format=jsonl").streaming_content)
    assert [json.loads(x)["seq"] for x in anonymous.decode().splitlines()] == [1, 3, 4, 6, 7, 8]


def test_a_stream_of_100000_events_runs_in_bounded_memory():
    Event.objects.all().delete()
    base = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    total = 100_000
    for start in range(0, total, 10_000):
        events_insert(
            [
                (
                    (
                        "best_offer",
                        "office.supplies.pencils",
                        None,
                        {"offer": i, "value": "1.25", "matching_bids": 3},
                    ),
                    base + dt.timedelta(milliseconds=i),
                )
                for i in range(start, start + 10_000)
            ],
            first_seq=start + 1,
        )
    response = client_for(None).get("/api/v1/events/?format=jsonl")
    tracemalloc.start()
    size = lines = 0
    last = b""
    for part in response.streaming_content:
        size += len(part)
        lines += part.count(b"\n")
        last = part
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (lines, json.loads(last.splitlines()[-1])["seq"]) == (total, total)
    # the whole output is over 12 MB; the read never held more than a few chunks of rows
    assert size > 12_000_000
    assert peak < 8_000_000, peak


def test_types_describe_every_event_type():
    body = client_for(None).get("/api/v1/events/types/").json()
    assert [t["type"] for t in body["types"]] == list(EVENT_TYPES)
    assert body["envelope"] == [
        {"name": "seq", "type": "int"},
        {"name": "time", "type": "timestamp"},
        {"name": "type", "type": "string"},
        {"name": "subject", "type": "string"},
    ]
    posted = body["types"][0]
    assert posted == {
        "type": "offer_posted",
        "attributes": [
            {"name": "offer", "type": "int", "optional": False},
            {"name": "version", "type": "int", "optional": False},
            {"name": "ask", "type": "decimal", "optional": False},
            {"name": "quantity_min", "type": "int|decimal", "optional": True},
            {"name": "quantity_max", "type": "int|decimal", "optional": True},
            {"name": "closes_at", "type": "timestamp", "optional": True},
            {"name": "constraint", "type": "string", "optional": False},
        ],
        "visible_to": "everyone",
    }
    assert {t["type"]: t["visible_to"] for t in body["types"]}[
        "bid_filled"
    ] == "the bidder and staff"
