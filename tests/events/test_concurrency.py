"""Several writers and a polling reader (SPEC 8.1): the reader never sees a hole that fills
later, nor a lower ``seq`` after a higher one; rolled-back work leaves no number behind."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from exchange.models import Event, EventCounter, Offer
from exchange.services.closing import offer_close
from exchange.services.matching import matching_cycle_run
from exchange.services.orders import bid_place, offer_publish
from tests.factories import StaffFactory, UserFactory, pencils_market

WRITERS = 4
ROUNDS = 12


class Rollback(Exception):
    pass


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_and_a_polling_reader_see_one_gapless_order():
    market = pencils_market()
    staff = StaffFactory()
    users = [UserFactory() for _ in range(WRITERS)]
    failures: list[str] = []
    done = threading.Event()
    seen: list[int] = []

    def writer(index: int) -> None:
        user = users[index]
        try:
            for round_ in range(ROUNDS):
                offer = offer_publish(
                    seller=user, market=market, constraint=f"lot = {round_ + 1} AND price >= 1.00"
                )
                bid_place(
                    buyer=user, market=market, constraint=f"lot = {round_ + 1} AND price <= 2.00"
                )
                if round_ % 3 == 0:
                    # work that rolls back: a request and a whole cycle
                    try:
                        with transaction.atomic():
                            offer_publish(
                                seller=user, market=market, constraint="lot = 99 AND price >= 1"
                            )
                            matching_cycle_run()
                            raise Rollback
                    except Rollback:
                        pass
                matching_cycle_run()
                if round_ % 4 == 1:
                    offer_close(offer_id=offer.pk, staff=staff)
        except Exception as exc:  # reported by the main thread
            failures.append(f"writer {index}: {exc!r}")
        finally:
            connections.close_all()

    def reader() -> None:
        last = 0
        try:
            while True:
                finished = done.is_set()
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT seq FROM exchange_event WHERE seq > %s ORDER BY seq", [last]
                    )
                    got = [row[0] for row in cursor.fetchall()]
                if got != list(range(last + 1, last + 1 + len(got))):
                    failures.append(f"after seq {last} the reader saw {got[:10]}...")
                    return
                seen.extend(got)
                last = got[-1] if got else last
                if finished:
                    return
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
    polling = threading.Thread(target=reader)
    polling.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    matching_cycle_run()
    done.set()
    polling.join()

    assert failures == []
    total = Event.objects.count()
    assert seen == list(range(1, total + 1))
    assert EventCounter.objects.get().last_seq == total
    # one offer_posted per committed offer, none for the rolled-back ones
    posted = sorted(Event.objects.filter(type="offer_posted").values_list("data__offer", flat=True))
    assert posted == sorted(Offer.objects.values_list("pk", flat=True))
    assert len(posted) == WRITERS * ROUNDS
    assert Event.objects.filter(type="trade").count() == WRITERS * len(range(1, ROUNDS, 4))
