"""Feed rows with the event's time and the market's units (issue 39): on /alerts/, from the
notes endpoint the live feed and every page's toasts read, and on the account page; the
webhook form and the signing secret shown once on /alerts/."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils.html import strip_tags

from exchange.models import SubscriptionWebhook, WebhookSecret
from exchange.services.subscriptions import subscription_create
from tests.factories import UserFactory, pencils_market
from tests.subscriptions.log import PENCILS, advance, append_at

pytestmark = pytest.mark.django_db

AT = dt.datetime(2031, 3, 4, 9, 5, 7, tzinfo=dt.UTC)
QUERY = "SELECT offer, price, quantity WHERE type = 'trade'"
ROW = "#1 Mar 4, 09:05:07 UTC Pencils offer 72 price 1,234.50 EUR quantity 150,000 pencils"
TEXT = (
    "#1 · Mar 4, 09:05:07 UTC · Pencils · offer 72 · price 1,234.50 EUR · quantity 150,000 pencils"
)


@pytest.fixture
def alice(client):
    user = UserFactory(username="alice")
    client.force_login(user)
    return user


@pytest.fixture
def notified(alice):
    market = pencils_market()
    market.title = "Pencils"
    market.save(update_fields=["title"])
    sub = subscription_create(owner=alice, query=QUERY, name="big trades")
    row = (
        "trade",
        PENCILS,
        None,
        {"offer": 72, "trade": 1, "price": "1234.50", "quantity": "150000"},
    )
    append_at([row], AT)
    advance(sub)
    return sub


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", strip_tags(html)).strip()


def test_a_feed_row_shows_the_time_the_market_and_units(client, notified):
    html = client.get("/alerts/").content.decode()
    match = re.search(r'<li class="alert-note alert-note-info" data-n="1">.*?</li>', html, re.S)
    assert match is not None
    assert _text(match.group(0)) == ROW
    assert '<time class="alert-time" datetime="2031-03-04T09:05:07+00:00">' in match.group(0)
    assert '<a class="alert-market" href="/markets/office.supplies.pencils/">Pencils</a>' in (
        match.group(0)
    )


def test_the_notes_endpoint_draws_the_same_row_and_one_line(
    client, notified, django_assert_max_num_queries
):
    # session, user, the subscription's owner, its notes, their events, their markets
    with django_assert_max_num_queries(6):
        response = client.get(f"/alerts/{notified.pk}/notes/?after=0")
    assert response.status_code == 200
    (note,) = response.json()["notes"]
    assert (note["n"], note["text"], note["tone"]) == (1, TEXT, "info")
    assert _text(note["html"]) == ROW
    assert client.get(f"/alerts/{notified.pk}/notes/?after=1").json() == {"notes": []}


def test_the_notes_endpoint_refuses_others_and_bad_numbers(client, notified):
    other = subscription_create(owner=UserFactory(), query=QUERY)
    assert client.get(f"/alerts/{other.pk}/notes/").status_code == 404
    assert client.get("/alerts/x/notes/").status_code == 404
    assert client.get(f"/alerts/{notified.pk}/notes/?after=-1").status_code == 400


def test_the_account_lists_the_newest_alert_notifications(client, notified):
    html = client.get("/account/").content.decode()
    match = re.search(r'<ol id="alert-notes-list".*?</ol>', html, re.S)
    assert match is not None
    assert _text(match.group(0)) == "big trades " + ROW


def test_the_secret_is_shown_once_and_the_webhook_form_sets_the_url(client, alice, notified):
    html = client.get("/alerts/").content.decode()
    assert "Make a secret" in html
    response = client.post("/alerts/webhook-secret/")
    secret = WebhookSecret.objects.get(owner=alice).secret
    assert f'value="{secret}"' in response.content.decode()
    html = client.get("/alerts/").content.decode()
    assert secret not in html
    assert "Rotate the secret" in html

    client.post(f"/alerts/{notified.pk}/webhook/", {"url": "http://127.0.0.1:9/hook"})
    hook = SubscriptionWebhook.objects.get()
    assert (hook.url, hook.delivered_n) == ("http://127.0.0.1:9/hook", 1)
    html = client.get("/alerts/").content.decode()
    assert "delivered up to #1" in html
    assert 'value="http://127.0.0.1:9/hook"' in html

    # A refused URL is said on the page and changes nothing
    response = client.post(
        f"/alerts/{notified.pk}/webhook/", {"url": "http://10.0.0.1/hook"}, follow=True
    )
    assert "is a private or reserved address" in response.content.decode()
    assert SubscriptionWebhook.objects.get().url == "http://127.0.0.1:9/hook"

    # Empty removes it
    client.post(f"/alerts/{notified.pk}/webhook/", {"url": ""})
    assert not SubscriptionWebhook.objects.exists()
