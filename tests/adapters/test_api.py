"""``POST /api/v1/markets/<subject>/import/`` (SPEC 8.2): per-row results, the caller's own
orders, limits that answer 413/400 with the row, a throttle, and no 500 for any body."""

from __future__ import annotations

import json
import uuid
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from exchange.models import Bid, ImportRef, Offer
from tests.api.conftest import client_for

from .conftest import LEGACY, nothing_written

pytestmark = pytest.mark.django_db

URL = "/api/v1/markets/office.supplies.pencils/import/"
PRICE_LIST = (LEGACY / "pencils-price-list.csv").read_bytes()
PRICE_MAP = (LEGACY / "pencils-price-list.map.json").read_text()
BIDS = (LEGACY / "pencils-bids.jsonl").read_bytes()
BIDS_MAP = (LEGACY / "pencils-bids.map.json").read_text()


@pytest.fixture(autouse=True)
def fresh_counters(settings):
    """Throttle counters of this test only (a key prefix of its own in the shared Redis)."""
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "KEY_PREFIX": f"test-{uuid.uuid4().hex}"}
    }


def post(client, body: bytes, *, side="offer", map_text=None, content_type="text/csv"):
    params = {"side": side} if side is not None else {}
    if map_text is not None:
        params["map"] = map_text
    return client.post(f"{URL}?{urlencode(params)}", data=body, content_type=content_type)


def test_a_price_list_becomes_the_callers_offers_with_one_result_per_row(pencils, seller):
    response = post(client_for(seller), PRICE_LIST, map_text=PRICE_MAP)
    assert response.status_code == 200
    offers = list(Offer.objects.order_by("pk"))
    assert {o.seller_id for o in offers} == {seller.pk}
    refs = ["PEN-HB-12", "PEN-2B-12", "PEN-H-12", "PEN-HB-144"]
    assert response.json() == {
        "market": "office.supplies.pencils",
        "side": "offer",
        "rows": 4,
        "created": 4,
        "existing": 0,
        "failed": 0,
        "results": [
            {"row": row, "status": "created", "id": offer.pk, "ref": ref}
            for row, offer, ref in zip([2, 3, 4, 5], offers, refs, strict=True)
        ],
    }
    again = post(client_for(seller), PRICE_LIST, map_text=PRICE_MAP)
    assert again.json()["results"][0] == {
        "row": 2,
        "status": "existing",
        "id": offers[0].pk,
        "ref": "PEN-HB-12",
    }
    assert (again.json()["created"], again.json()["existing"]) == (0, 4)
    assert Offer.objects.count() == 4


def test_a_bid_feed_in_json_lines_with_its_map(pencils, buyer):
    response = post(
        client_for(buyer),
        BIDS,
        side="bid",
        map_text=BIDS_MAP,
        content_type="application/x-ndjson",
    )
    assert response.status_code == 200
    assert response.json()["created"] == 3
    assert list(Bid.objects.order_by("pk").values_list("buyer_id", "constraint_text")) == [
        (buyer.pk, "lot BETWEEN 2000 AND 5000 AND price <= 1.10 AND grade = 'HB'"),
        (buyer.pk, "lot >= 6000 AND price <= 0.92 AND string grade = *"),
        (buyer.pk, "lot BETWEEN 500 AND 1500 AND price <= 1.06 AND grade = '2B'"),
    ]


def test_a_failed_row_has_its_row_column_code_and_message(pencils, seller):
    body = b"ref,lot,price\nA,100,1.00\nB,100,1.001\nC,lots,1.00\nD,,\n"
    response = post(client_for(seller), body)
    assert response.status_code == 200
    (offer,) = Offer.objects.all()
    assert response.json()["results"] == [
        {"row": 2, "status": "created", "id": offer.pk, "ref": "A"},
        {
            "row": 3,
            "status": "failed",
            "ref": "B",
            "column": "price",
            "code": "off_tick",
            "message": "The price 1.001 is not on this market's tick of 0.01: use a multiple of 0.01.",
        },
        {
            "row": 4,
            "status": "failed",
            "ref": "C",
            "column": "lot",
            "code": "bad_literal",
            "message": "'lots' is not a number; numbers look like 42, -7, 1.00 or 1.5e3",
        },
        {
            "row": 5,
            "status": "failed",
            "ref": "D",
            "column": "-",
            "code": "empty_row",
            "message": "none of the columns the map reads has a value",
        },
    ]
    assert list(ImportRef.objects.values_list("ref", flat=True)) == ["A"]


def test_anonymous_callers_import_nothing(pencils):
    response = post(client_for(None), PRICE_LIST, map_text=PRICE_MAP)
    assert response.status_code == 401
    assert nothing_written()


@pytest.mark.parametrize(
    ("params", "body", "content_type", "status", "error"),
    [
        (
            {"side": "sell"},
            b"ref\n",
            "text/csv",
            400,
            {"code": "invalid_side", "message": "side is offer or bid.", "field": "side"},
        ),
        (
            {"side": "offer", "map": '{"attributes": {"colour": "c"}}'},
            b"ref\n",
            "text/csv",
            400,
            {
                "code": "invalid_map",
                "message": "attributes.colour: this market has no such attribute; it has lot, price, grade",
                "field": "map",
            },
        ),
        (
            {"side": "offer", "map": '{"format": "jsonl", "attributes": {"lot": "q"}}'},
            b"ref\n",
            "text/csv",
            400,
            {
                "code": "format_mismatch",
                "message": "The map reads jsonl but the body is sent as text/csv.",
                "field": "map",
            },
        ),
        (
            {"side": "offer"},
            b"ref,lot\nA,\xff\n",
            "text/csv",
            400,
            {
                "code": "bad_encoding",
                "message": "the feed is not UTF-8 text",
                "field": "body",
                "row": 2,
            },
        ),
        (
            {"side": "offer"},
            b'ref,lot\nA,"1\n',
            "text/csv",
            400,
            {
                "code": "bad_csv",
                "message": "not CSV: unexpected end of data",
                "field": "body",
                "row": 2,
            },
        ),
        (
            {"side": "offer"},
            b"",
            "text/csv",
            400,
            {
                "code": "empty_feed",
                "message": "Send the feed as text/csv or application/x-ndjson.",
                "field": "body",
            },
        ),
        (
            {"side": "offer"},
            b'{"ref": "A"}',
            "application/json",
            415,
            {
                "code": "unsupported_media_type",
                "message": 'Unsupported media type "application/json" in request.',
            },
        ),
    ],
)
def test_a_request_that_cannot_be_imported_is_refused_whole(
    pencils, seller, params, body, content_type, status, error
):
    response = client_for(seller).post(
        f"{URL}?{urlencode(params)}", data=body, content_type=content_type
    )
    assert (response.status_code, response.json()) == (status, {"error": error})
    assert nothing_written()


def test_a_body_over_the_size_limit_is_a_413(pencils, seller, settings):
    settings.IMPORT_MAX_BYTES = 64
    body = b"ref,lot,price\n" + b"".join(f"R{i},10,1.00\n".encode() for i in range(10))
    assert len(body) > 64
    response = post(client_for(seller), body)
    assert (response.status_code, response.json()) == (
        413,
        {"error": {"code": "too_large", "message": "An import body is limited to 64 bytes."}},
    )
    assert nothing_written()


def test_more_rows_than_one_import_takes_is_a_413_naming_the_first_row_over(
    pencils, seller, settings
):
    settings.IMPORT_MAX_ROWS = 3
    body = b"ref,lot,price\n" + b"".join(f"R{i},10,1.00\n".encode() for i in range(4))
    response = post(client_for(seller), body)
    assert (response.status_code, response.json()) == (
        413,
        {
            "error": {
                "code": "too_many_rows",
                "message": "one import takes at most 3 rows; split the feed",
                "field": "body",
                "row": 5,
            }
        },
    )
    assert nothing_written()


def import_rate(monkeypatch, rate: str) -> None:
    monkeypatch.setattr(
        SimpleRateThrottle,
        "THROTTLE_RATES",
        {**api_settings.DEFAULT_THROTTLE_RATES, "import": rate},
    )


def test_imports_are_throttled_per_user(pencils, seller, monkeypatch):
    import_rate(monkeypatch, "2/min")
    client = client_for(seller)
    statuses = [post(client, b"ref,lot,price\nA,10,1.00\n").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert post(client, b"ref,lot,price\nB,10,1.00\n").json()["error"]["code"] == "throttled"
    assert list(ImportRef.objects.values_list("ref", flat=True)) == ["A"]


_garbage = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.lists(
        st.dictionaries(
            # The default map's columns most of the time, so that rows reach the services.
            st.one_of(st.sampled_from(["ref", "lot", "price", "grade"]), st.text(max_size=8)),
            st.one_of(st.none(), st.integers(), st.text(max_size=8), st.floats()),
        ),
        max_size=4,
    ).map(lambda rows: "\n".join(json.dumps(r) for r in rows).encode()),
    st.lists(st.lists(st.text(max_size=6), min_size=3, max_size=4), max_size=5).map(
        lambda rows: "\n".join(",".join(r) for r in [["ref", "lot", "price"], *rows]).encode(
            "utf-8", "surrogatepass"
        )
    ),
)


@hypothesis_settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    body=_garbage,
    content_type=st.sampled_from(
        ["text/csv", "application/x-ndjson", "application/jsonl", "text/plain"]
    ),
    side=st.sampled_from(["offer", "bid", "", "x"]),
    map_text=st.one_of(st.none(), st.text(max_size=40), st.just(PRICE_MAP), st.just(BIDS_MAP)),
)
def test_no_body_makes_a_server_error(
    pencils, seller, monkeypatch, body, content_type, side, map_text
):
    import_rate(monkeypatch, "100000/min")
    response = post(
        client_for(seller), body, side=side, map_text=map_text, content_type=content_type
    )
    assert response.status_code in (200, 400, 413, 415), response.content
    response.json()


def test_a_deeply_nested_json_line_fails_alone(pencils, buyer):
    deep = '{"ref": ' + "[" * 40_000 + "]" * 40_000 + "}"
    body = f'{deep}\n{{"ref": "B", "lot": 10, "price": "1.00"}}\n'.encode()
    response = post(client_for(buyer), body, side="bid", content_type="application/jsonl")
    (bid,) = Bid.objects.all()
    assert response.json()["results"] == [
        {
            "row": 1,
            "status": "failed",
            "column": "-",
            "code": "too_deep",
            "message": "JSON may nest arrays and objects at most 2 levels deep.",
        },
        {"row": 2, "status": "created", "id": bid.pk, "ref": "B"},
    ]


@pytest.mark.parametrize("ref", ["a\u0000b", "two\nlines", "x" * 101])
def test_a_ref_that_cannot_be_kept_fails_its_row(pencils, buyer, ref):
    line = json.dumps({"ref": ref, "lot": 10, "price": "1.00"})
    response = post(client_for(buyer), line.encode(), side="bid", content_type="application/jsonl")
    assert response.json()["results"] == [
        {
            "row": 1,
            "status": "failed",
            "column": "ref",
            "code": "invalid_ref",
            "message": "a ref is 1 to 100 printable characters",
        }
    ]
    assert nothing_written()
