"""The staff dashboard's SPEC 8 panel in real headless Chromium against the live stack
(issue 23): range watches registered and an order flow appended through the log's writer;
the stack's subscription engine delivers the watches by dissemination and logs the
optimizer's choice for each change it delivered, and the page shows the log's head, the replica, the partitions, the subscriptions
by form, a suspended one, a pattern's instances and those choices."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from exchange.dissemination.choices import choices_key
from exchange.models import Subscription, SubscriptionNotification
from exchange.redis_clients import redis_client
from exchange.selectors.dissemination import dissemination_choices
from exchange.selectors.events import events_log_end
from exchange.services.event_partitions import DEFAULT_PARTITION
from exchange.services.subscriptions import subscription_create
from matching.subscriptions.run.snapshot import snapshot_dump
from tests.dissemination.test_live import FLOW, PENS, WATCHES, posted
from tests.exchange.test_dashboard_spec8 import RISE, _evaluator, _subscription
from tests.factories import StaffFactory, UserFactory
from tests.subscriptions.log import append

from .conftest import WAIT_MS, login, off_loop, screenshot

pytestmark = [pytest.mark.stack, pytest.mark.usefixtures("clean_engine")]


def _setup() -> dict[str, int]:
    redis_client().delete(choices_key())  # only this test's choices
    append([posted(1, "1.20", 3000), posted(2, "1.10", 8000), posted(3, "0.50", 100, subject=PENS)])
    ann, bob = UserFactory(username="ann"), UserFactory(username="bob")
    watches = [subscription_create(owner=ann, query=WATCHES[n]) for n in ("lot", "cheapest")]
    pattern = _subscription(
        bob, "pattern", evaluator=snapshot_dump(_evaluator(RISE, ["1.00", "0.99"]))
    )
    stuck = _subscription(bob, "pattern", "suspended", reason="state_limit", last_n=1)
    SubscriptionNotification.objects.create(subscription=stuck, n=1, seq=1, data={})
    return {"watch": watches[0].pk, "pattern": pattern.pk, "stuck": stuck.pk}


def _flow() -> int:
    for commit in FLOW[:4]:
        append(commit)
    return events_log_end()


def _wait_for_choices(seq: int) -> list[dict]:
    """The engine delivers the watches after each append and logs its choices after the
    commit; wait until it logged ``seq``."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        got = off_loop(dissemination_choices, limit=100)
        if any(c["seq"] == seq for c in got):
            return got
        time.sleep(0.2)
    pytest.fail(f"no choice logged for seq {seq}: {got}")


def test_staff_see_the_spec8_panel_with_live_choices(new_page, live_stack):
    StaffFactory(username="stella", is_superuser=True)
    ids = off_loop(_setup)
    # The engine advances the watches (their first answers) before the flow starts
    deadline = time.monotonic() + WAIT_MS / 1000
    while off_loop(lambda: Subscription.objects.get(pk=ids["watch"]).last_n) < 1:
        assert time.monotonic() < deadline, "the watches were never advanced"
        time.sleep(0.2)
    last = off_loop(_flow)
    choices = _wait_for_choices(last)
    # One engine process holds both watches: no change is logged twice
    seqs = [c["seq"] for c in choices]
    assert len(seqs) == len(set(seqs)), seqs

    staff = new_page()
    login(staff, "stella")
    staff.goto("/staff/")
    expect(staff.locator("h2#event-log")).to_have_text("Event log and subscriptions (SPEC 8)")
    head = staff.locator("#log-head tr", has_text="Head of the log")
    expect(head).to_contain_text(re.compile(rf"seq {last} at \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC"))
    expect(staff.locator("#replica")).to_contain_text(
        re.compile("no replica configured|lag .* byte|unreachable")
    )
    partitions = staff.locator("h3#partitions + table tbody tr")
    expect(partitions.last).to_contain_text(DEFAULT_PARTITION)
    forms = staff.locator("h3#subscriptions + table tbody tr")
    expect(forms).to_have_count(4)
    # innerText separates a row's cells with tabs
    cells = {"use_inner_text": True}
    expect(forms.nth(2)).to_have_text(re.compile(r"form 3: pattern\s+1\s+0\s+0\s+1\s+2"), **cells)
    expect(forms.nth(3)).to_have_text(re.compile(r"form 4: watch\s+2\s+0\s+0\s+0\s+2"), **cells)
    expect(staff.locator("h3#suspended + table tbody tr")).to_have_text(
        re.compile(rf"subscription {ids['stuck']}\s+bob\s+pattern\s+state_limit\s+\d{{4}}-"),
        **cells,
    )
    expect(staff.locator("h3#patterns + table tbody tr")).to_have_text(
        re.compile(rf"subscription {ids['pattern']}\s+bob\s+2\s+\d"), **cells
    )
    newest = choices[0]
    row = staff.locator("#dissemination ~ table tbody tr").first
    expect(row).to_have_text(
        re.compile(
            rf"UTC\s+seq {newest['seq']}\s+{newest['choice']}\s+enumerate: .*; relax: .*; "
            r"reformulate: .*\s+\d+\.\d{3} ms\s+\d+\.\d{3} ms"
        ),
        **cells,
    )
    screenshot(staff, "staff-dashboard-spec8")
    assert new_page.errors == []
