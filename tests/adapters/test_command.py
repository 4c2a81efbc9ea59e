"""``manage.py adapter_import`` on the two sample feeds and on broken ones (SPEC 8.2)."""

from __future__ import annotations

import io
import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from exchange.models import BestOffer, Bid, ImportRef, Offer, OrderChange
from exchange.services.matching import matching_cycle_run
from tests.factories import UserFactory

from .conftest import LEGACY, nothing_written

pytestmark = pytest.mark.django_db

PRICE_LIST = str(LEGACY / "pencils-price-list.csv")
PRICE_MAP = str(LEGACY / "pencils-price-list.map.json")
BIDS = str(LEGACY / "pencils-bids.jsonl")
BIDS_MAP = str(LEGACY / "pencils-bids.map.json")


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("adapter_import", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue(), err.getvalue()


def offers_import(path: str = PRICE_LIST, map_path: str | None = PRICE_MAP, user="seller1"):
    extra = ["--map", map_path] if map_path else []
    return run(
        "--market", "office.supplies.pencils", "--side", "offer", "--user", user, *extra, path
    )


def bids_import(path: str):
    return run(
        "--market",
        "office.supplies.pencils",
        "--side",
        "bid",
        "--user",
        "buyer1",
        "--map",
        BIDS_MAP,
        path,
    )


def test_the_sample_price_list_becomes_one_tiered_offer_per_row(pencils, seller):
    code, out, err = offers_import()
    assert (code, err) == (0, "")
    offers = list(Offer.objects.order_by("pk"))
    assert [o.constraint_text for o in offers] == [
        "(grade = 'HB' AND lot BETWEEN 1000 AND 10000 AND price = 1.00)"
        " OR (grade = 'HB' AND lot BETWEEN 5000 AND 10000 AND price = 0.90)",
        "(grade = '2B' AND lot BETWEEN 500 AND 8000 AND price = 1.08)"
        " OR (grade = '2B' AND lot BETWEEN 2000 AND 8000 AND price = 1.02)"
        " OR (grade = '2B' AND lot BETWEEN 6000 AND 8000 AND price = 0.97)",
        "grade = 'H' AND lot >= 1000 AND price = 1.05",
        "(grade = 'HB' AND lot BETWEEN 10000 AND 50000 AND price = 0.85)"
        " OR (grade = 'HB' AND lot BETWEEN 25000 AND 50000 AND price = 0.80)",
    ]
    assert {o.seller.username for o in offers} == {"seller1"}
    ids = [o.pk for o in offers]
    assert out.splitlines() == [
        f"{PRICE_LIST}:2: created offer {ids[0]} (ref PEN-HB-12)",
        f"{PRICE_LIST}:3: created offer {ids[1]} (ref PEN-2B-12)",
        f"{PRICE_LIST}:4: created offer {ids[2]} (ref PEN-H-12)",
        f"{PRICE_LIST}:5: created offer {ids[3]} (ref PEN-HB-144)",
        f"{PRICE_LIST}: 4 rows: 4 created, 0 existing, 0 failed",
    ]
    # Through the service: each offer is queued for the matching cycle like any other.
    assert sorted(OrderChange.objects.values_list("order_id", flat=True)) == ids


def test_importing_the_same_feed_again_creates_nothing(pencils, seller):
    offers_import()
    ids = list(Offer.objects.order_by("pk").values_list("pk", flat=True))
    changes = OrderChange.objects.count()
    code, out, err = offers_import()
    assert (code, err) == (0, "")
    assert list(Offer.objects.order_by("pk").values_list("pk", flat=True)) == ids
    assert OrderChange.objects.count() == changes
    assert out.splitlines()[0] == f"{PRICE_LIST}:2: existing offer {ids[0]} (ref PEN-HB-12)"
    assert out.splitlines()[-1] == f"{PRICE_LIST}: 4 rows: 0 created, 4 existing, 0 failed"


def test_refs_are_per_user(pencils, seller):
    offers_import()
    UserFactory(username="seller2")
    code, out, err = offers_import(user="seller2")
    assert (code, err) == (0, "")
    assert Offer.objects.filter(seller__username="seller2").count() == 4
    assert Offer.objects.count() == 8


def test_the_sample_bid_feed_becomes_bids_bounding_the_price(pencils, buyer):
    code, out, err = bids_import(BIDS)
    assert (code, err) == (0, "")
    assert list(Bid.objects.order_by("pk").values_list("constraint_text", flat=True)) == [
        "lot BETWEEN 2000 AND 5000 AND price <= 1.10 AND grade = 'HB'",
        # A bid leaves grade open: the market makes it a wildcard.
        "lot >= 6000 AND price <= 0.92 AND string grade = *",
        "lot BETWEEN 500 AND 1500 AND price <= 1.06 AND grade = '2B'",
    ]
    assert out.splitlines()[-1] == f"{BIDS}: 3 rows: 3 created, 0 existing, 0 failed"


BAD_PRICE_LIST = """\
sku,grade,min_qty,max_qty,unit_price,qty_break_2,price_break_2
OK-1,HB,1000,2000,1.00,,
BAD-TICK,HB,1000,2000,1.005,,
BAD-NUMBER,HB,"1,000",2000,1.00,,
BAD-TIER,HB,1000,9000,1.00,5000,0.905
NO-LOT,HB,,,1.00,,
NEGATIVE,HB,10,20,-1.00,,
EXTRA,HB,10,20,1.00,,,surplus
OK-2,B,10,20,0.50,,
"""


def one_tier_map(tmp_path) -> str:
    path = tmp_path / "map.json"
    path.write_text(
        json.dumps(
            {
                "ref": "sku",
                "attributes": {
                    "grade": "grade",
                    "lot": {"between": ["min_qty", "max_qty"]},
                    "price": "unit_price",
                },
                "tiers": [
                    {"lot": {"between": ["qty_break_2", "max_qty"]}, "price": "price_break_2"}
                ],
            }
        )
    )
    return str(path)


def test_a_bad_row_is_reported_at_its_column_and_creates_nothing(pencils, seller, tmp_path):
    feed = tmp_path / "prices.csv"
    feed.write_text(BAD_PRICE_LIST)
    code, out, err = offers_import(str(feed), one_tier_map(tmp_path))
    assert code == 2
    assert err.splitlines() == [
        f"{feed}:3:unit_price: The price 1.005 is not on this market's tick of 0.01: use a multiple of 0.01.",
        f"{feed}:4:min_qty: '1,000' is not a number; numbers look like 42, -7, 1.00 or 1.5e3",
        # The second tier's price, found by checking each tier alone.
        f"{feed}:5:price_break_2: The price 0.905 is not on this market's tick of 0.01: use a multiple of 0.01.",
        f"{feed}:6:min_qty: Every offer in this market must constrain lot (Lot size).",
        f"{feed}:7:unit_price: Prices cannot be negative.",
        f"{feed}:8:-: this row has 8 cells; the header names 7 columns",
    ]
    assert list(Offer.objects.order_by("pk").values_list("constraint_text", flat=True)) == [
        "grade = 'HB' AND lot BETWEEN 1000 AND 2000 AND price = 1.00",
        "grade = 'B' AND lot BETWEEN 10 AND 20 AND price = 0.50",
    ]
    assert sorted(ImportRef.objects.values_list("ref", flat=True)) == ["OK-1", "OK-2"]
    assert out.splitlines()[-1] == f"{feed}: 8 rows: 2 created, 0 existing, 6 failed"


def test_a_jsonl_feed_reports_lines_that_are_not_rows(pencils, buyer, tmp_path):
    feed = tmp_path / "bids.jsonl"
    feed.write_text(
        '{"po_number": "A", "qty_from": 10, "max_unit_price": "1.10"}\n'
        "\n"
        '{"po_number": "B", "qty_from": 10,\n'
        '["not", "an", "object"]\n'
        '{"po_number": "C", "qty_from": {"min": 10}, "max_unit_price": "1.10"}\n'
        '{"po_number": "D", "qty_from": 10, "max_unit_price": 1.1}\n'
        '{"po_number": "A", "qty_from": 99, "max_unit_price": "9.99"}\n'
    )
    code, out, err = bids_import(str(feed))
    assert code == 2
    assert err.splitlines() == [
        f"{feed}:3:-: This line is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 35 (char 34).",
        f"{feed}:4:-: each line must be a JSON object",
        f"{feed}:5:qty_from: a value is text or a number",
    ]
    bids = list(Bid.objects.order_by("pk"))
    assert [b.constraint_text for b in bids] == [
        "lot >= 10 AND price <= 1.10 AND string grade = *",
        "lot >= 10 AND price <= 1.10 AND string grade = *",
    ]
    # The second A is the first one again, whatever it says now.
    assert out.splitlines() == [
        f"{feed}:1: created bid {bids[0].pk} (ref A)",
        f"{feed}:6: created bid {bids[1].pk} (ref D)",
        f"{feed}:7: existing bid {bids[0].pk} (ref A)",
        f"{feed}: 6 rows: 2 created, 1 existing, 3 failed",
    ]


def test_without_a_map_columns_named_like_attributes_are_equalities(pencils, buyer, tmp_path):
    feed = tmp_path / "bids.csv"
    feed.write_text("ref,lot,price,colour\nX1,3000,1.10,red\n,4000,1.20,\n")
    code, out, err = run(
        "--market", "office.supplies.pencils", "--side", "bid", "--user", "buyer1", str(feed)
    )
    assert (code, err) == (0, "")
    assert list(Bid.objects.order_by("pk").values_list("constraint_text", flat=True)) == [
        "lot = 3000 AND price = 1.10 AND string grade = *",
        "lot = 4000 AND price = 1.20 AND string grade = *",
    ]
    # Only the row with a ref is remembered.
    assert list(ImportRef.objects.values_list("ref", flat=True)) == ["X1"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1]", "a map is a JSON object with attributes (and format, ref, tiers)"),
        (
            "{",
            "The map is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1).",
        ),
        (
            '{"attributes": {"colour": "c"}}',
            "attributes.colour: this market has no such attribute; it has lot, price, grade",
        ),
        (
            '{"attributes": {"lot": {"between": ["a"]}}}',
            "attributes.lot.between: must be a list of two column names [LOW, HIGH]",
        ),
        (
            '{"attributes": {"lot": {"column": "a", "op": "~"}}}',
            "attributes.lot.op: must be one of = != < <= > >=",
        ),
        (
            '{"attributes": {"lot": "a"}, "tiers": {}}',
            "tiers: must be a list of objects like attributes",
        ),
        ('{"attributes": {"lot": "a"}, "format": "xls"}', "format: must be csv or jsonl"),
        (
            '{"attributes": {"lot": "a"}, "colums": {}}',
            "colums: not a map key; a map has attributes, delimiter, format, ref, tiers",
        ),
        ('{"attributes": {}}', "attributes: name at least one attribute"),
        ('{"ref": ""}', "ref: must be a column name (a non-empty string)"),
    ],
)
def test_a_bad_map_is_one_clear_line_and_exit_2(pencils, seller, tmp_path, content, message):
    path = tmp_path / "map.json"
    path.write_text(content)
    code, out, err = offers_import(map_path=str(path))
    assert (code, out, err) == (2, "", f"{path}: {message}\n")
    assert nothing_written()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"sku,grade\n\xff\n", "2: the feed is not UTF-8 text"),
        (b'sku,grade\nA,"HB\n', "2: not CSV: unexpected end of data"),
        (b"\n\n", " the feed has no header line naming its columns"),
        (b"sku,,grade\n", "1: a column of the header has no name"),
        (b"sku,sku\n", "1: the header names sku twice"),
        (b"sku,grade\nA,H\x00B\n", "2: the feed contains a NUL character"),
    ],
)
def test_a_file_that_cannot_be_read_creates_nothing(pencils, seller, tmp_path, content, message):
    feed = tmp_path / "prices.csv"
    feed.write_bytes(content)
    code, out, err = offers_import(str(feed), map_path=None)
    assert (code, out, err) == (2, "", f"{feed}:{message}\n".replace(":  ", ": "))
    assert nothing_written()


def test_unknown_market_user_file_or_format_are_clear_errors(pencils, seller, tmp_path):
    assert run(
        "--market", "office.nothing", "--side", "offer", "--user", "seller1", PRICE_LIST
    ) == (2, "", "--market: there is no market office.nothing\n")
    assert offers_import(user="nobody") == (2, "", "--user: there is no user nobody\n")
    missing = tmp_path / "missing.csv"
    assert offers_import(str(missing), map_path=None) == (
        2,
        "",
        f"{missing}: cannot read it: No such file or directory\n",
    )
    odd = tmp_path / "prices.txt"
    odd.write_text("ref,lot\n")
    assert offers_import(str(odd), map_path=None) == (
        2,
        "",
        f"{odd}: cannot tell the format: name the file .csv, .jsonl or .ndjson, "
        'or give the map a "format"\n',
    )
    assert nothing_written()


def test_the_imported_samples_match_like_orders_posted_by_hand(pencils, seller, buyer):
    offers_import()
    bids_import(BIDS)
    matching_cycle_run()
    offers = list(Offer.objects.order_by("pk"))
    bids = list(Bid.objects.order_by("pk"))
    best = {
        b.offer_id: (b.bid_id, b.value, b.matching_bids)
        for b in BestOffer.objects.filter(offer__in=offers)
    }
    assert [best[o.pk] for o in offers] == [
        # HB, 1,000 to 10,000 at 1.00 (or from 5,000 at 0.90): PO-0412 at 1.00, PO-0413 at 0.90.
        (bids[0].pk, Decimal("1.00"), 2),
        # 2B from 500 at 1.08 down to 0.97 from 6,000: nobody bids that much for 2B.
        (None, None, 0),
        # H: no bid for H, and PO-0413's 0.92 is under 1.05.
        (None, None, 0),
        # HB cartons from 10,000 at 0.85: PO-0413 (from 6,000 at most 0.92).
        (bids[1].pk, Decimal("0.85"), 1),
    ]
