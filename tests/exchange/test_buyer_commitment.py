"""Each buyer's ``BuyerCommitment`` is the sum of its active bids' ``largest_award``, kept
by the triggers on ``exchange_bid`` (migration 0026) through every kind of write: the
ORM's single rows, bulk inserts and updates, queryset updates and deletions, raw SQL; and
the limit check reads it (``buyer_room``). ``tests/exchange/test_stateful.py`` checks the
same after random histories of the services."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exchange.models import Bid, BuyerCommitment
from exchange.selectors.limits import buyer_room, buyer_rooms
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db


def commitments() -> dict[int, Decimal]:
    """Each buyer's kept commitment, the buyers at zero left out (a row may stay at zero)."""
    return {b: c for b, c in BuyerCommitment.objects.values_list("buyer_id", "committed") if c != 0}


def active_award_sums() -> dict[int, Decimal]:
    """The same summed from the bids themselves."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT buyer_id, sum(largest_award) FROM exchange_bid WHERE state = 'active' "
            "GROUP BY buyer_id HAVING sum(largest_award) <> 0"
        )
        return dict(cursor.fetchall())


def new_bid(market, buyer, award: str | None, state: str = "active") -> Bid:
    return Bid(
        market=market,
        buyer=buyer,
        constraint_text="price <= 1.00",
        constraint_json=[],
        version=1,
        state=state,
        largest_award=None if award is None else Decimal(award),
    )


def test_every_kind_of_write_keeps_the_sums():
    market = pencils_market()
    a, b = UserFactory(), UserFactory()
    one = new_bid(market, a, "100.50")
    one.save()
    assert commitments() == {a.pk: Decimal("100.50")}
    Bid.objects.bulk_create(
        [
            new_bid(market, a, "10"),
            new_bid(market, b, "7.25"),
            new_bid(market, b, None),
            new_bid(market, b, "1000", state="withdrawn"),
        ]
    )
    assert commitments() == {a.pk: Decimal("110.50"), b.pk: Decimal("7.25")}
    one.largest_award = Decimal("50")
    one.save(update_fields=["largest_award"])
    assert commitments() == {a.pk: Decimal("60.00"), b.pk: Decimal("7.25")}
    # a change that moves no sum (the constraint only) writes nothing
    Bid.objects.filter(buyer=a).update(constraint_text="price <= 0.99")
    assert commitments() == {a.pk: Decimal("60.00"), b.pk: Decimal("7.25")}
    # one statement over both buyers: withdrawn, and awarded where there was none
    Bid.objects.filter(largest_award__lt=20).update(state="withdrawn")
    assert commitments() == {a.pk: Decimal("50.00")}
    Bid.objects.filter(buyer=b, largest_award=None).update(largest_award=Decimal("3"))
    assert commitments() == {a.pk: Decimal("50.00"), b.pk: Decimal("3")}
    rows = list(Bid.objects.filter(state="withdrawn").order_by("pk"))
    for row in rows:
        row.state = "active"
    Bid.objects.bulk_update(rows, ["state"])
    assert (
        commitments()
        == active_award_sums()
        == {
            a.pk: Decimal("60.00"),
            b.pk: Decimal("1010.25"),
        }
    )
    with connection.cursor() as cursor:
        cursor.execute("UPDATE exchange_bid SET state = 'filled' WHERE id = %s", [one.pk])
    assert commitments() == {a.pk: Decimal("10.00"), b.pk: Decimal("1010.25")}
    Bid.objects.filter(buyer=b).delete()
    assert commitments() == {a.pk: Decimal("10.00")}
    assert BuyerCommitment.objects.get(buyer=b).committed == 0  # its row stays, at zero


def test_the_limit_check_reads_the_commitment(settings):
    settings.SPENDING_LIMIT_DEFAULT = Decimal("1000")
    market = pencils_market()
    buyer, idle = UserFactory(), UserFactory()
    first, second = new_bid(market, buyer, "300"), new_bid(market, buyer, "200")
    Bid.objects.bulk_create([first, second, new_bid(market, buyer, None)])
    room = buyer_room(buyer_id=buyer.pk)
    assert (room.limit, room.committed, room.remaining) == (
        Decimal("1000"),
        Decimal("500"),
        Decimal("500"),
    )
    # an amendment is checked without the bid it amends; a bid not active commits nothing
    assert buyer_room(buyer_id=buyer.pk, other_than=first.pk).committed == Decimal("200")
    Bid.objects.filter(pk=second.pk).update(state="withdrawn")
    assert buyer_room(buyer_id=buyer.pk, other_than=second.pk).committed == Decimal("300")
    assert buyer_room(buyer_id=idle.pk).committed == 0  # no row at all
    rooms = buyer_rooms(buyer_ids={buyer.pk, idle.pk})
    assert {k: r.committed for k, r in rooms.items()} == {buyer.pk: Decimal("300"), idle.pk: 0}


awards = st.one_of(st.none(), st.decimals("0", "5000", places=2))
writes = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 2), awards, st.sampled_from(["active", "filled"])),
        st.tuples(st.just("award"), st.integers(0, 30), awards),
        st.tuples(st.just("state"), st.integers(0, 30), st.sampled_from(["active", "withdrawn"])),
        st.tuples(st.just("buyer_state"), st.integers(0, 2), st.sampled_from(["active", "filled"])),
        st.tuples(st.just("delete"), st.integers(0, 30)),
    ),
    max_size=25,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=writes)
def test_random_writes_keep_every_buyers_sum(steps):
    with transaction.atomic():
        market = pencils_market()
        buyers = [UserFactory() for _ in range(3)]
        for step in steps:
            ids = list(Bid.objects.order_by("pk").values_list("pk", flat=True))
            kind = step[0]
            if kind == "add":
                new_bid(
                    market, buyers[step[1]], None if step[2] is None else str(step[2]), step[3]
                ).save()
            elif kind == "buyer_state":
                Bid.objects.filter(buyer=buyers[step[1]]).update(state=step[2])
            elif ids:
                bid = Bid.objects.filter(pk=ids[step[1] % len(ids)])
                if kind == "award":
                    bid.update(largest_award=step[2])
                elif kind == "state":
                    bid.update(state=step[2])
                else:
                    bid.delete()
            assert commitments() == active_award_sums(), step
        transaction.set_rollback(True)
