"""The push after a cycle's commit sends the notifications it has in hand: it reads back
which are still undelivered, never their payloads, and skips any the sweep took meanwhile
(issue 17: the matching worker decoded every notification again after each cycle)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from exchange.models import Market, Notification, Offer
from exchange.realtime import streams
from exchange.services.notifications import notifications_push_on_commit
from tests.exchange.test_cycle_statements import statements

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, dict]]:
    messages: list[tuple[str, dict]] = []
    monkeypatch.setattr(streams, "group_send_all", lambda batch: messages.extend(batch))
    return messages


def outbox() -> list[Notification]:
    call_command("bench_book", offers=2, bids=2, seed=3, verbosity=0)
    Notification.objects.update(delivered_at=timezone.now())
    market = Market.objects.get()
    offer = Offer.objects.order_by("id").first()
    user = get_user_model().objects.get(username="buyer0")
    return Notification.objects.bulk_create(
        [
            Notification(market=market, offer=offer, type="best_offer", data={"best_value": 1}),
            Notification(market=market, offer=offer, recipient=user, type="sold", data={"a": 1}),
            Notification(market=market, offer=offer, type="best_offer", data={"best_value": 2}),
        ]
    )


def test_the_push_sends_the_rows_in_hand_and_marks_them(sent, django_capture_on_commit_callbacks):
    notes = outbox()
    with statements() as queries, django_capture_on_commit_callbacks(execute=True):
        notifications_push_on_commit(reversed(notes))  # any order in: id order out

    first, personal, last = notes
    frames = [(group, m.get("frame", m)) for group, m in sent]
    market_frames = [
        f
        for g, f in frames
        if g
        == streams.public_message(
            stream="market:office.supplies.pencils", type="best_offer", seq=1, data=None
        )[0]
    ]
    assert [f["seq"] for f in market_frames] == [first.pk, last.pk]
    assert [f["data"] for f in market_frames] == [{"best_value": 1}, {"best_value": 2}]
    assert (
        streams.user_group(personal.recipient_id),
        {"type": "user.wake", "seq": personal.pk},
    ) in sent
    # One read of which rows wait (ids only) and one update marking them
    assert len(queries) == 2, queries
    assert '"exchange_notification"."data"' not in queries[0]
    assert not Notification.objects.filter(delivered_at=None).exists()


def test_rows_the_sweep_delivered_meanwhile_are_not_sent_again(
    sent, django_capture_on_commit_callbacks
):
    notes = outbox()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        notifications_push_on_commit(notes)
    Notification.objects.filter(pk=notes[0].pk).update(delivered_at=notes[0].created_at)

    for callback in callbacks:
        callback()

    seqs = [m["frame"]["seq"] for _g, m in sent if "frame" in m]
    assert notes[0].pk not in seqs
    assert notes[2].pk in seqs
    assert Notification.objects.get(pk=notes[0].pk).delivered_at == notes[0].created_at
