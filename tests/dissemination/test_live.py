"""The dissemination optimizer beside the subscription engine (``exchange.dissemination.live``):
on an order flow through the log, the shadow's consumers notify every range watch exactly
what the watch's outbox holds after its registration (which is what ``subscription_run``
prints), its choices reach the dashboard's Redis log with their estimates and measured
time, and only one worker process runs it."""

from __future__ import annotations

from typing import Any

import pytest

from exchange.dissemination import live
from exchange.dissemination.choices import choices_key
from exchange.models import Subscription
from exchange.redis_clients import redis_client
from exchange.selectors.dissemination import dissemination_choices
from exchange.selectors.events import events_log_end
from exchange.services.subscriptions import subscription_create
from matching.dissemination import STRATEGIES
from tests.factories import UserFactory
from tests.subscriptions.log import PENCILS, advance, append, engine, offline, outbox

pytestmark = pytest.mark.django_db

PENS = "office.supplies.pens"
WATCHES = {
    "lot": f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}' "
    "AND quantity_max BETWEEN 2000 AND 5000",
    "cheapest": f"SELECT MIN(ask) FROM offers WHERE subject = '{PENCILS}'",
    "dearest": "SELECT MAX(ask) FROM offers WHERE subject MATCHES 'office.>' "
    "NOTIFY WHEN CHANGED BY 5%",
    "best": f"SELECT MIN(best_value) FROM offers WHERE subject = '{PENCILS}'",
    "one": "SELECT best_value FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY 3%",
}


def posted(
    offer: int, ask: str, quantity_max: int, *, subject: str = PENCILS, kind: str = "offer_posted"
):
    return (
        kind,
        subject,
        None,
        {"offer": offer, "version": 1, "ask": ask, "quantity_max": quantity_max,
         "constraint": f"price >= {ask}"},
    )  # fmt: skip


def best(offer: int, value: str, *, subject: str = PENCILS):
    return ("best_offer", subject, None, {"offer": offer, "value": value, "matching_bids": 1})


def ended(offer: int, kind: str = "offer_withdrawn", *, subject: str = PENCILS):
    data: dict[str, Any] = {"offer": offer}
    if kind == "offer_closed":
        data["outcome"] = "sold"
    return (kind, subject, None, data)


# Each change is one commit of the log, as matching cycles append them.
FLOW = [
    [posted(4, "1.00", 2500)],  # lot and cheapest: offer 4
    [posted(2, "0.95", 8000, kind="offer_amended")],  # cheapest: offer 2
    [best(1, "1.15"), best(2, "1.00")],  # best: offer 2 at 1.00 (after 1 at 1.15)
    [ended(4)],  # lot: back to offer 1
    [("trade", PENCILS, None, {"offer": 2, "trade": 1, "price": "1.00", "quantity": 8000})],
    [ended(2, "offer_closed")],  # cheapest: offer 4 is gone too, so offer 1; best: offer 1
    [posted(5, "1.30", 100, subject=PENS)],  # dearest: 1.20 -> 1.30, more than 5%
    [posted(5, "1.33", 100, subject=PENS, kind="offer_amended")],  # dearest: within 5%
    [best(1, "1.10")],  # one: 1.15 -> 1.10 is more than 3%; best: 1.10
]


@pytest.fixture
def clean():
    # The shadow starts from the watches' stored states: the engine checkpoints them at
    # every batch here (a process does every SUBSCRIPTION_ENGINE_CHECKPOINT_EVENTS events,
    # and the shadow then has that much more to follow).
    engine().checkpoint_events = 0
    client = redis_client()
    client.delete(choices_key(), live.owner_key())
    yield
    client.delete(choices_key(), live.owner_key())


def _register() -> dict[str, Subscription]:
    append([posted(1, "1.20", 3000), posted(2, "1.10", 8000), posted(3, "0.50", 100, subject=PENS)])
    ann = UserFactory(username="ann")
    subs = {name: subscription_create(owner=ann, query=text) for name, text in WATCHES.items()}
    advance()
    return subs


def test_the_shadow_notifies_each_range_watch_what_its_outbox_holds(clean):
    subs = _register()
    shadow = live.Shadow()
    # When it first runs, it takes the open offers from a watch and holds the range watches
    assert shadow.round() is False
    assert shadow.position == events_log_end()
    assert sorted(shadow.producer.home) == sorted(s.pk for n, s in subs.items() if n != "one")
    for commit in FLOW:
        append(commit)
    advance()
    assert shadow.round() is False
    for name, sub in subs.items():
        lines = outbox(sub)
        # The live path is the offline contract (its own tests say so; checked here too)
        assert lines == offline(sub)
        if name == "one":
            assert sub.pk not in shadow.notified  # single-offer watches are not disseminated
            continue
        # After the registration line, the shadow notified exactly the outbox
        assert [(line["seq"], line["data"]) for line in lines[1:]] == shadow.notified[sub.pk]
    # and the flow moved every range watch (not an empty comparison)
    assert {name: len(outbox(s)) - 1 for name, s in subs.items()} == {
        "lot": 2, "cheapest": 3, "dearest": 1, "best": 4, "one": 2,
    }  # fmt: skip


def test_each_change_that_reaches_a_watch_is_logged_with_estimates_and_measured_time(clean):
    _register()
    shadow = live.Shadow()
    shadow.round()
    first = events_log_end()
    for commit in FLOW:
        append(commit)
    shadow.round()
    got = dissemination_choices(limit=100)
    # Newest first; the trade reaches no watch and is not logged
    trade_seq = first + 6
    assert sorted(c["seq"] for c in got) == [
        s for s in range(first + 1, events_log_end() + 1) if s != trade_seq
    ]
    assert [c["seq"] for c in got] == sorted((c["seq"] for c in got), reverse=True)
    for c in got:
        assert c["choice"] in STRATEGIES
        assert set(c["estimates"]) == set(STRATEGIES)
        assert c["measured_seconds"] >= 0
        chosen = c["estimates"][c["choice"]]["seconds"]
        assert chosen == min(e["seconds"] for e in c["estimates"].values())


def test_a_watch_that_ends_leaves_and_a_new_one_joins(clean):
    subs = _register()
    shadow = live.Shadow()
    shadow.round()
    Subscription.objects.filter(pk=subs["lot"].pk).update(state="done", reason="deleted")
    newer = subscription_create(owner=subs["lot"].owner, query=WATCHES["lot"])
    advance()
    shadow.round()
    assert subs["lot"].pk not in shadow.producer.home
    assert newer.pk in shadow.producer.home
    append(FLOW[0])
    advance()
    shadow.round()
    assert shadow.notified == {
        newer.pk: [(events_log_end(), {"offer": 4, "value": "1.00"})],
        subs["cheapest"].pk: [(events_log_end(), {"offer": 4, "value": "1.00"})],
    }


def test_without_range_watches_the_shadow_holds_nothing(clean):
    append([posted(1, "1.20", 3000)])
    shadow = live.Shadow()
    assert shadow.round() is False
    assert shadow.producer is None
    assert dissemination_choices() == []


def test_one_worker_process_runs_it_and_a_failure_never_stops_the_task(clean, monkeypatch):
    calls = []

    def follow(self):
        calls.append(self)
        return True

    monkeypatch.setattr(live.Shadow, "round", follow)
    # Taking the key starts a shadow afresh; keeping it goes on with the same one
    assert live.dissemination_round() is True
    assert live.dissemination_round() is True
    assert len(calls) == 2 and calls[0] is calls[1] is live._SHADOW
    # Another process holds the key: this one skips
    redis_client().set(live.owner_key(), "elsewhere:1", ex=60)
    assert live.dissemination_round() is False
    assert len(calls) == 2
    # Once free again, this process takes it with a new shadow: the old one may have missed
    # what the other owner followed
    redis_client().delete(live.owner_key())
    assert live.dissemination_round() is True
    assert calls[2] is not calls[1]
    # A process forked from this one after the import (a prefork child) is another owner
    monkeypatch.setattr(live.os, "getpid", lambda: -1)
    assert live.dissemination_round() is False
    assert len(calls) == 3
    monkeypatch.undo()
    redis_client().delete(live.owner_key())

    def fails(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(live.Shadow, "round", fails)
    assert live.dissemination_round() is False  # taken, failed
    broken = live._SHADOW
    assert live.dissemination_round() is False  # kept, failed
    assert live._SHADOW is not broken  # after a failure it starts afresh


def test_the_setting_turns_it_off(clean, settings, monkeypatch):
    settings.DISSEMINATION_SHADOW = False
    monkeypatch.setattr(live._SHADOW, "round", lambda: pytest.fail("ran"))
    assert live.dissemination_round() is False
