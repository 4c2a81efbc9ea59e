"""The matching cycle writes the best-offer rows, their history and the outbox in one statement
of its own (``BEST_WRITE_SQL``, issue 36) rather than through the ORM, and makes its outbox
rows by position (``_note``): both must write and return exactly what the ORM would.

Generated writes (rows inserted, updated and deleted, history, outbox rows with any JSON
payload) go once through ``_best_write`` and once through the ORM path the cycle used before
(``bulk_create`` of history and outbox rows, the ORM's delete), each in a savepoint rolled
back after; every column of every row (read as PostgreSQL's JSON of the whole row, so a
column added later is compared too) and every returned object must be the same.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange.models import BestOffer, BestOfferChange, Bid, Notification, Offer
from exchange.services.best import NO_BEST, Best
from exchange.services.matching import _best_write, batch_apply, matching_cycle_run, partition_lock
from exchange.services.notifications import NOTE_FIELDS, _note
from exchange.services.orders import bid_place, offer_publish
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db

OFFERS, BIDS, PEOPLE = 4, 3, 3


@pytest.fixture
def book() -> tuple[list[Offer], list[Bid], list[int]]:
    """Offers in two markets (each with its best-offer row but the last), bids, and users."""
    markets = [pencils_market(), pencils_market(subject="office.supplies.pens", pricing="second")]
    people = [UserFactory() for _ in range(PEOPLE)]
    offers = [
        offer_publish(
            seller=people[i % PEOPLE],
            market=markets[i % 2],
            constraint=f"lot BETWEEN {100 * i + 1} AND {100 * i + 50} AND price >= 1.00",
        )
        for i in range(OFFERS)
    ]
    for i in range(BIDS):
        bid_place(buyer=people[i], market=markets[0], constraint=f"lot = {i + 1} AND price <= 2")
    matching_cycle_run()
    BestOffer.objects.filter(offer=offers[-1]).delete()
    offers = list(Offer.objects.select_related("market").order_by("pk"))
    return offers, list(Bid.objects.order_by("pk")), [p.pk for p in people]


# JSON payloads: every kind of value, strings with quotes, backslashes and any character
# PostgreSQL's jsonb takes (not NUL), and finite numbers.
text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
payload = st.dictionaries(
    text,
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(10**20), 10**20)
        | st.floats(allow_nan=False, allow_infinity=False)
        | text,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
        max_leaves=8,
    ),
    max_size=5,
)
# A best bid as a cycle computes it: none, or a bid with its value (a match's value, at
# most 10 places as its column keeps) and how many bids match.
values = st.decimals(min_value=0, max_value=Decimal(10) ** 19, places=10)
best = st.one_of(
    st.just(None),
    st.tuples(st.integers(0, BIDS - 1), values, st.integers(1, 2**31 - 1)),
)
writes = st.fixed_dictionaries(
    {
        # offer index -> written best (None: no best) or deleted ("gone")
        "rows": st.dictionaries(st.integers(0, OFFERS - 1), st.one_of(best, st.just("gone"))),
        "history": st.lists(st.tuples(st.integers(0, OFFERS - 1), best), max_size=6),
        # (offer, recipient: None for a public row, type, data)
        "notes": st.lists(
            st.tuples(
                st.integers(0, OFFERS - 1),
                st.one_of(st.none(), st.integers(0, PEOPLE - 1)),
                st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30),
                payload,
            ),
            max_size=8,
        ),
    }
)


def _best(drawn: Any, bids: list[Bid]) -> Best:
    if drawn is None:
        return NO_BEST
    bid, value, count = drawn
    return Best(bids[bid].pk, value, count)


def orm_write(
    *,
    written: dict[int, Best],
    gone: list[int],
    history: list[tuple[int, Best]],
    notes: list[Notification],
    now: dt.datetime,
) -> None:
    """The same writes through the ORM, as ``best_offers_refresh`` made them before issue 36
    (the best-offer rows were already one raw upsert; here the ORM's upsert stands for it)."""
    BestOffer.objects.bulk_create(
        [
            BestOffer(offer_id=o, bid_id=b.bid_id, value=b.value, matching_bids=b.matching_bids,
                      changed_at=now)
            for o, b in sorted(written.items())
        ],
        update_conflicts=True,
        unique_fields=["offer"],
        update_fields=["bid", "value", "matching_bids", "changed_at"],
    )  # fmt: skip
    if gone:
        BestOffer.objects.filter(pk__in=gone).delete()
    BestOfferChange.objects.bulk_create(
        [
            BestOfferChange(offer_id=o, bid_id=b.bid_id, value=b.value,
                            matching_bids=b.matching_bids, at=now)
            for o, b in history
        ],
        batch_size=5000,
    )  # fmt: skip
    Notification.objects.bulk_create(notes, batch_size=5000)


def rows_after(write: Any, offers: list[Offer]) -> tuple[dict[str, list[str]], dt.datetime]:
    """Run ``write`` in a savepoint rolled back after; every row it left, each as the text of
    PostgreSQL's JSON of the whole row (ids left out: the sequences move on), in id order,
    and the time before it ran."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT (SELECT coalesce(max(id), 0) FROM exchange_notification),"
                " (SELECT coalesce(max(id), 0) FROM exchange_bestofferchange)"
            )
            notes_mark, history_mark = cursor.fetchone()
        before = timezone.now()
        write()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT (to_jsonb(n) - 'id' - 'created_at')::text, n.id, n.created_at"
                " FROM exchange_notification n WHERE id > %s ORDER BY id",
                [notes_mark],
            )
            notes = cursor.fetchall()
            cursor.execute(
                "SELECT (to_jsonb(c) - 'id')::text FROM exchange_bestofferchange c"
                " WHERE id > %s ORDER BY id",
                [history_mark],
            )
            history = [row[0] for row in cursor.fetchall()]
            cursor.execute(
                "SELECT to_jsonb(b)::text FROM exchange_bestoffer b WHERE offer_id = ANY(%s)"
                " ORDER BY offer_id",
                [[o.pk for o in offers]],
            )
            best_rows = [row[0] for row in cursor.fetchall()]
        transaction.set_rollback(True)
    assert all(before <= created <= timezone.now() for _, _, created in notes)
    found = {
        "notes": [row[0] for row in notes],
        "ids": [row[1] for row in notes],
        "created": [row[2] for row in notes],
        "history": history,
        "best": best_rows,
    }
    return found, before


def returned(note: Notification) -> dict[str, Any]:
    """What a written outbox object holds, but its id and creation time."""
    fields = {f.attname: getattr(note, f.attname) for f in Notification._meta.concrete_fields}
    del fields["id"], fields["created_at"]
    cache = {name: id(value) for name, value in note._state.fields_cache.items()}
    return fields | {"adding": note._state.adding, "db": note._state.db, "cache": cache}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(drawn=writes)
def test_the_one_statement_writes_and_returns_what_the_orm_would(book, drawn):
    # Given generated best-offer rows, deletions, history and outbox rows
    offers, bids, people = book
    written = {
        offers[i].pk: _best(b, bids) for i, b in sorted(drawn["rows"].items()) if b != "gone"
    }
    gone = [offers[i].pk for i, b in sorted(drawn["rows"].items()) if b == "gone"]
    history = [(offers[i].pk, _best(b, bids)) for i, b in drawn["history"]]
    now = timezone.now()

    def notes(keyword: bool) -> list[Notification]:
        made = []
        for i, person, kind, data in drawn["notes"]:
            offer, recipient = offers[i], None if person is None else people[person]
            if keyword:  # as best_offer_notifications made them before issue 36
                extra = {"recipient_id": recipient} if recipient else {"recipient": None}
                made.append(
                    Notification(market=offer.market, offer=offer, type=kind, data=data, **extra)
                )
            else:
                made.append(_note(offer=offer, recipient_id=recipient, kind=kind, data=data))
        return made

    raw, orm = notes(keyword=False), notes(keyword=True)

    # When they are written in one statement, and through the ORM
    got, _ = rows_after(
        lambda: _best_write(written=written, gone=gone, history=history, notes=raw, now=now),
        offers,
    )
    want, _ = rows_after(
        lambda: orm_write(written=written, gone=gone, history=history, notes=orm, now=now),
        offers,
    )

    # Then every row is the same, column by column, in the same order
    assert got["notes"] == want["notes"]
    assert got["history"] == want["history"]
    assert got["best"] == want["best"]
    # and the objects come back as bulk_create returns them: ids in the order of the list
    # (the order of delivery), the rows' own ids and creation time
    assert [n.pk for n in raw] == got["ids"] == sorted(got["ids"])
    assert len(set(got["ids"])) == len(raw)
    assert [n.created_at for n in raw] == got["created"]
    assert [returned(n) for n in raw] == [returned(n) for n in orm]


def test_a_note_is_made_as_the_keyword_form_makes_it(book):
    # Given an offer, its seller and its market
    offers, _, people = book
    offer = offers[0]
    data = {"offer": offer.pk, "state": "open"}

    # When a public and a personal row are made by position and by keyword
    made = [
        (
            _note(offer=offer, recipient_id=None, kind="best_offer", data=data),
            Notification(
                market=offer.market, offer=offer, recipient=None, type="best_offer", data=data
            ),
        ),
        (
            _note(offer=offer, recipient_id=people[1], kind="best_bid", data=data),
            Notification(
                market=offer.market, offer=offer, recipient_id=people[1], type="best_bid",
                data=data,
            ),
        ),
    ]  # fmt: skip

    # Then the columns are the ones ``_note`` passes by position, and the objects are equal
    # in every field, state and cached related object
    assert tuple(f.attname for f in Notification._meta.concrete_fields) == NOTE_FIELDS
    for by_position, by_keyword in made:
        assert {k: v for k, v in vars(by_position).items() if k != "_state"} == {
            k: v for k, v in vars(by_keyword).items() if k != "_state"
        }
        assert vars(by_position._state) == vars(by_keyword._state)
        assert by_position._state.fields_cache == by_keyword._state.fields_cache


def test_a_cycle_returns_its_outbox_rows_as_written(book):
    # Given a bid that becomes an offer's best, outbidding the one there
    offers, _, people = book
    buyer = UserFactory()
    bid_place(buyer=buyer, market=offers[0].market, constraint="lot = 1 AND price <= 3")
    mark = Notification.objects.order_by("-pk").values_list("pk", flat=True).first()

    # When a cycle takes the change
    with transaction.atomic():
        partition_lock(0, 1)
        report, notes = batch_apply()

    # Then the objects it returns for the push are its rows, in id order, field by field
    rows = list(Notification.objects.filter(pk__gt=mark).order_by("pk"))
    fields = [f.attname for f in Notification._meta.concrete_fields]
    assert [[getattr(n, f) for f in fields] for n in notes] == [
        [getattr(n, f) for f in fields] for n in rows
    ]
    assert [n.market.subject for n in notes] == [offers[0].market.subject] * 4
    assert report.notifications == 4
    assert [(n.type, n.recipient_id) for n in rows] == [
        ("best_offer", None),
        ("best_offer", offers[0].seller_id),
        ("best_bid", buyer.pk),
        ("outbid", people[0]),
    ]
