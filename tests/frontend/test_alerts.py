"""The Alerts and feeds page through Django's test client (no browser, no worker): the
editor and its check, the gallery, saving, the list with states and feeds, pause, resume,
delete and the backtest. The browser journeys are in tests/browser/test_alerts_ui.py."""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from rest_framework.test import APIClient

from exchange.models import Subscription
from exchange.selectors.ui import alerts_page
from exchange.services.orders import offer_publish
from exchange.services.subscriptions import subscription_create, subscription_pause
from frontend.alert_notes import data_items
from frontend.views.alerts import GALLERY, gallery
from matching.subscriptions import parse_query, to_text
from tests.api.conftest import rates  # noqa: F401 - the fixture that sets rates
from tests.factories import UserFactory, pencils_market
from tests.subscriptions.log import PENCILS, advance, append, append_at, trade

pytestmark = pytest.mark.django_db

PAGE = "/alerts/"
CHECK = "/alerts/check/"
BACKTEST = "/alerts/backtest/"
QUERY = "SELECT price WHERE type = 'trade'"
PENS = "office.supplies.pens"


@pytest.fixture
def alice(client):
    user = UserFactory(username="alice")
    client.force_login(user)
    return user


def test_the_urls_are_in_the_frontend_namespace():
    assert reverse("frontend:alerts") == PAGE
    assert reverse("frontend:alerts-check") == CHECK
    assert reverse("frontend:alerts-backtest") == BACKTEST
    assert reverse("frontend:alert-pause", args=[7]) == "/alerts/7/pause/"
    assert reverse("frontend:alert-resume", args=[7]) == "/alerts/7/resume/"
    assert reverse("frontend:alert-delete", args=[7]) == "/alerts/7/delete/"


def test_anonymous_users_are_sent_to_login(client):
    for response in (client.get(PAGE), client.post(CHECK), client.post("/alerts/1/pause/")):
        assert response.status_code == 302
        assert response["Location"].startswith("/login/?next=")
    assert client.get(f"{PAGE}?query=SELECT%20*")["Location"] == (
        "/login/?next=/alerts/%3Fquery%3DSELECT%2520%2A"
    )


def test_query_and_name_in_the_address_fill_the_editor_and_save_nothing(client, alice):
    response = client.get(PAGE, {"query": "SELECT price WHERE price > 1 & <x>", "name": "mine"})

    assert response.status_code == 200
    html = response.content.decode()
    assert (
        '<textarea id="alert-query" name="query" rows="4" spellcheck="false" autocomplete="off" '
        'autocapitalize="off"\n                aria-describedby="alert-query-status '
        'alert-query-help" data-query>SELECT price WHERE price &gt; 1 &amp; &lt;x&gt;</textarea>'
    ) in html
    assert 'name="name" type="text" maxlength="100" value="mine"' in html
    assert Subscription.objects.count() == 0
    # and the nav links the page, marked as the current one
    assert (
        '<a href="/alerts/" aria-current="page">Alerts and feeds <span class="count" id="alerts-unread" hidden>0</span></a>'
        in html
    )


def test_the_gallery_has_one_example_per_form_and_each_parses():
    user = UserFactory()
    examples = gallery(user)
    kinds = [parse_query(example["query"]).kind.value for example in examples]
    assert [example["title"] for example in examples] == [title for title, _ in GALLERY]
    assert kinds == ["events", "events", "pattern", "pattern", "state", "state"]
    # each is already in canonical text, so it saves as it reads
    assert [to_text(parse_query(e["query"])) for e in examples] == [e["query"] for e in examples]
    assert examples[4]["query"].endswith(
        "FROM offers WHERE subject = 'office.supplies.pencils', quantity_max BETWEEN 2000 AND 5000"
    )
    assert examples[5]["query"] == (
        "SELECT best_value FROM offers WHERE offer = 1 NOTIFY WHEN CHANGED BY 3%"
    )


def test_the_offer_example_names_the_users_newest_open_offer():
    market = pencils_market(subject="office.supplies.pens")
    seller = UserFactory()
    offer_publish(seller=seller, market=market, constraint="lot BETWEEN 1 AND 9 AND price >= 1")
    newest = offer_publish(
        seller=seller, market=market, constraint="lot BETWEEN 1 AND 9 AND price >= 2"
    )
    examples = gallery(seller)
    assert f"WHERE offer = {newest.pk} NOTIFY" in examples[5]["query"]
    assert "subject = 'office.supplies.pens'" in examples[4]["query"]
    parse_query(examples[5]["query"])


def test_the_page_shows_the_gallery_with_links_that_fill_the_editor(client, alice):
    html = client.get(PAGE).content.decode()
    first = GALLERY[0][1]
    assert f'data-example-query="{escape(first)}"' in html
    assert html.count('class="gallery-item"') == 6


def test_check_answers_the_canonical_query_and_its_kind(client, alice):
    response = client.post(
        CHECK, {"query": "select price where type='trade'"}, content_type="application/json"
    )
    assert response.status_code == 200
    assert response.json() == {"query": QUERY, "kind": "events", "warnings": []}
    assert Subscription.objects.count() == 0


def test_check_warns_of_a_subject_pattern_no_market_matches_yet(client, alice):
    # Given the pencils market and no other
    pencils_market()
    query = (
        "SELECT price WHERE type = 'trade', subject MATCHES 'ofice.>', "
        "(subject = 'office.supplies.pencls' OR subject = 'office.supplies.pencils')"
    )
    # When the editor checks a query naming a pattern and a subject that match no market
    response = client.post(CHECK, {"query": query}, content_type="application/json")
    # Then it is valid (it may be saved: such markets may be created) and warned of, each
    # where it is quoted, with the nearest subject for a misspelt one; the one that matches
    # is not
    assert response.status_code == 200
    assert response.json()["warnings"] == [
        {
            "code": "no_market",
            "message": "No market's subject matches 'ofice.>' yet: this subscription notifies "
            "nothing until one does.",
            "position": query.index("'ofice.>'"),
        },
        {
            "code": "no_market",
            "message": "No market has subject 'office.supplies.pencls' yet: this subscription "
            "notifies nothing until one does. Did you mean 'office.supplies.pencils'?",
            "position": query.index("'office.supplies.pencls'"),
        },
    ]
    assert Subscription.objects.count() == 0
    # Once a market matches, the warning goes
    pencils_market(subject="ofice.pens")
    response = client.post(CHECK, {"query": query}, content_type="application/json")
    assert [w["position"] for w in response.json()["warnings"]] == [
        query.index("'office.supplies.pencls'")
    ]


@pytest.mark.parametrize(
    ("query", "code", "position"),
    [
        ("SELECT price WHERE", "syntax", 18),
        ("SELECT colour WHERE type = 'trade'", "unknown_attribute", 7),
    ],
)
def test_check_gives_the_parsers_code_message_and_position(client, alice, query, code, position):
    response = client.post(CHECK, {"query": query}, content_type="application/json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["position"], error["field"]) == (code, position, "query")
    with pytest.raises(Exception) as raised:
        parse_query(query)
    assert error["message"] == raised.value.message
    assert Subscription.objects.count() == 0


@pytest.mark.parametrize("body", ["not json", "[]", '{"query": 5}', "{}"])
def test_check_refuses_a_malformed_body_clearly(client, alice, body):
    response = client.post(CHECK, body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] in ("bad_request", "bad_json")
    assert response.json()["error"]["message"]


def test_save_registers_the_query_and_goes_to_its_feed(client, alice):
    response = client.post(PAGE, {"query": "select price where type='trade'", "name": "pencils"})

    row = Subscription.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/alerts/#sub-{row.pk}"
    assert (row.owner, row.name, row.query, row.state) == (alice, "pencils", QUERY, "active")
    page = client.get(PAGE).content.decode()
    assert f"Saved subscription {row.pk}: its feed is below." in page
    assert f'<li id="sub-{row.pk}" class="alert-item" data-subscription="{row.pk}"' in page


def test_a_refused_save_shows_the_error_at_its_position_and_saves_nothing(client, alice):
    response = client.post(PAGE, {"query": "SELECT colour WHERE type = 'trade'", "name": "x"})

    assert response.status_code == 400
    html = response.content.decode()
    assert '<mark class="err">colour</mark>' in html
    assert "(line 1, column 8)" in html
    assert 'data-error-code="unknown_attribute" data-error-position="7"' in html
    assert 'value="x"' in html
    assert Subscription.objects.count() == 0


def _feed(html: str, sid: int) -> list[int]:
    match = re.search(rf'<ol class="alert-feed" id="feed-{sid}".*?</ol>', html, re.S)
    assert match is not None
    return [int(n) for n in re.findall(r'data-n="(\d+)"', match.group(0))]


def test_the_list_shows_each_state_and_the_newest_notifications_of_each_feed(
    client, alice, monkeypatch
):
    monkeypatch.setattr(alerts_page, "FEED_SHOWN", 3)
    # Given an active subscription that sent five, a paused one, a deleted one, a suspended one
    active = subscription_create(owner=alice, query=QUERY, name="five")
    append([trade(f"1.0{i}") for i in range(5)])
    advance(active)
    paused = subscription_create(owner=alice, query="SELECT *")
    subscription_pause(owner=alice, subscription_id=paused.pk)
    deleted = subscription_create(owner=alice, query="SELECT subject")
    client.post(f"/alerts/{deleted.pk}/delete/")
    suspended = subscription_create(owner=alice, query="SELECT seq")
    Subscription.objects.filter(pk=suspended.pk).update(
        state="suspended", reason="state_limit", evaluator=None
    )
    other = subscription_create(owner=UserFactory(), query="SELECT type")

    html = client.get(PAGE).content.decode()

    # Then each shows its state (a reason where it ended) and only the right actions
    states = re.findall(
        r'<li id="sub-(\d+)" class="alert-item" data-subscription="\d+" '
        r'data-state="(\w+)"',
        html,
    )
    # (the deleted one is archived out of the list; the API still lists it)
    assert states == [
        (str(suspended.pk), "suspended"),
        (str(paused.pk), "paused"),
        (str(active.pk), "active"),
    ]
    assert "1 deleted subscription archived" in html
    assert f"sub-{deleted.pk}" not in html
    assert f"sub-{other.pk}" not in html
    assert "suspended: it passed a limit on its kept events, work or outputs (state_limit)" in html
    assert f'action="/alerts/{active.pk}/pause/"' in html
    assert f'action="/alerts/{paused.pk}/resume/"' in html
    assert f'action="/alerts/{suspended.pk}/resume/"' not in html
    assert f'data-confirm="Delete subscription {active.pk} (five)?' in html
    # and the feed holds the newest three, newest first, resuming after the newest
    assert _feed(html, active.pk) == [5, 4, 3]
    assert (
        f'data-stream="sub:{active.pk}" data-subscription="{active.pk}" '
        f'data-notes="/alerts/{active.pk}/notes/" data-after="5" '
        "data-follow" in html
    )
    assert '<span class="alert-k">price</span> <span class="alert-v">1.04</span>' in html
    # with a button for the older ones in the outbox (shown by the script)
    assert f'data-older="/alerts/{active.pk}/notes/" data-feed="feed-{active.pk}"' in html
    assert html.count("data-older=") == 1
    assert _feed(html, paused.pk) == []
    assert f'data-stream="sub:{deleted.pk}"' not in html


def test_the_feeds_are_read_in_a_bounded_number_of_queries(
    client, alice, django_assert_max_num_queries
):
    for i in range(6):
        subscription_create(owner=alice, query=f"SELECT price WHERE price > {i}")
    with django_assert_max_num_queries(12):
        assert client.get(PAGE).status_code == 200


@pytest.mark.parametrize(
    ("action", "state_after"), [("pause", "paused"), ("resume", "active"), ("delete", "done")]
)
def test_pause_resume_and_delete_from_the_page(client, alice, action, state_after):
    sub = subscription_create(owner=alice, query=QUERY)
    if action == "resume":
        subscription_pause(owner=alice, subscription_id=sub.pk)

    response = client.post(f"/alerts/{sub.pk}/{action}/")

    assert response.status_code == 302
    assert response["Location"] == f"/alerts/#sub-{sub.pk}"
    assert Subscription.objects.get(pk=sub.pk).state == state_after


@pytest.mark.parametrize("action", ["pause", "resume", "delete"])
def test_someone_elses_or_an_ended_subscription_is_refused_and_left_as_it_was(
    client, alice, action
):
    theirs = subscription_create(owner=UserFactory(), query=QUERY)
    ended = subscription_create(owner=alice, query=QUERY)
    client.post(f"/alerts/{ended.pk}/delete/")

    for sub, message in (
        (theirs, f"You have no subscription {theirs.pk}."),
        (ended, None),
    ):
        before = Subscription.objects.filter(pk=sub.pk).values().get()
        response = client.post(f"/alerts/{sub.pk}/{action}/", follow=True)
        assert Subscription.objects.filter(pk=sub.pk).values().get() == before
        html = response.content.decode()
        if message:
            assert message in html
        elif action != "delete":  # ending an ended one again changes nothing and says so
            assert f"Subscription {ended.pk} is done (deleted)" in html
    response = client.post("/alerts/x/pause/", follow=True)
    assert "You have no subscription x." in response.content.decode()
    assert client.get(f"/alerts/{ended.pk}/pause/").status_code == 405


def test_data_items_flatten_aliases_and_sort_keys():
    assert data_items({"b": {"offer": 7}, "a": {"price": "1.10", "x": None}}, {}) == [
        ("a.price", "1.10"),
        ("a.x", "—"),
        ("b.offer", "7"),
    ]
    assert data_items({"offer": None}, {}) == [("offer", "—")]


def _backtest(client, query: str, range_: str = "hour", *, htmx: bool = True):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(BACKTEST, {"query": query, "range": range_}, **headers)


def test_a_backtest_shows_a_table_and_a_chart_with_a_marker_per_notification(client, alice):
    # Given trades in the last hour on pencils (two in one second) and one on pens
    pencils_market()
    start = timezone.now().replace(microsecond=0) - dt.timedelta(minutes=40)
    append_at([trade("1.00", trade_id=1), trade("1.20", trade_id=2)], start)
    append_at([trade("1.30", trade_id=3, subject=PENS)], start + dt.timedelta(minutes=5))
    append_at([trade("0.90", trade_id=4)], start + dt.timedelta(minutes=10))
    append_at([trade("1.25", trade_id=5)], start + dt.timedelta(minutes=20))
    second = int(start.timestamp())

    response = _backtest(client, "SELECT price WHERE type = 'trade', price > 1.10")

    # Then the fragment lists the three notifications with their events' times and markets
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-backtest-count="3"' in html
    assert re.findall(r'<tr data-n="(\d+)">.*?<code>([a-z.]+)</code>', html, re.S) == [
        ("1", PENCILS),
        ("2", PENS),
        ("3", PENCILS),
    ]
    assert f'<time datetime="{start.isoformat()}">' in html
    # and the chart: pencils' prices (one point a second, the second's last), a marker at
    # each pencils notification; the pens one belongs to another market's chart
    chart = json.loads(re.search(r'id="backtest-data"[^>]*>(.*?)</script>', html, re.S).group(1))
    assert chart == {
        "subject": PENCILS,
        "title": "Pencils",
        "precision": 2,
        "points": [
            {"time": second, "value": 1.2},
            {"time": second + 600, "value": 0.9},
            {"time": second + 1200, "value": 1.25},
        ],
        "markers": [{"time": second, "text": "#1"}, {"time": second + 1200, "text": "#3"}],
    }
    assert Subscription.objects.count() == 0


def test_a_backtest_with_a_bad_query_or_range_says_what_and_where(client, alice):
    bad = _backtest(client, "SELECT price WHERE price >")
    assert bad.status_code == 200  # htmx swaps it in
    assert 'data-backtest-error="syntax"' in bad.content.decode()
    assert '<mark class="err"> </mark>' in bad.content.decode()

    bad_range = _backtest(client, QUERY, "year")
    assert 'data-backtest-error="invalid_range"' in bad_range.content.decode()

    whole = _backtest(client, "SELECT price WHERE price >", htmx=False)
    assert whole.status_code == 400
    assert "<h1>Alerts and feeds</h1>" in whole.content.decode()
    assert Subscription.objects.count() == 0


def test_a_backtest_without_htmx_shows_the_whole_page_with_the_result(client, alice):
    append([trade("1.20")])
    response = _backtest(client, QUERY, "day", htmx=False)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-backtest-count="1"' in html
    assert '<option value="day" selected>the last day</option>' in html


def test_check_and_backtest_are_throttled_the_backtest_with_the_apis_counter(
    client, alice, request, settings
):
    # Counters of this test only: a key prefix of its own in the shared Redis cache
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "KEY_PREFIX": f"test-{uuid.uuid4().hex}"}
    }
    request.getfixturevalue("rates")(check="2/min", backtest="2/min")
    checks = [
        client.post(CHECK, {"query": QUERY}, content_type="application/json").status_code
        for _ in range(3)
    ]
    assert checks == [200, 200, 429]

    # One backtest through the API and one through the page use the user's two
    api = APIClient()
    api.force_authenticate(alice)
    since = (timezone.now() - dt.timedelta(hours=1)).isoformat()
    answer = api.post(
        "/api/v1/subscriptions/test/", {"query": QUERY, "since": since}, format="json"
    )
    assert answer.status_code == 200
    assert 'data-backtest-count="0"' in _backtest(client, QUERY).content.decode()
    refused = _backtest(client, QUERY)
    assert 'data-backtest-error="throttled"' in refused.content.decode()
    assert "Too many backtests; try again in" in refused.content.decode()
    assert _backtest(client, QUERY, htmx=False).status_code == 429


def test_a_backtest_of_a_watch_and_of_a_composite_shows_their_rows(client, alice):
    # A watch's first answer has no event (seq null): a row without time or market
    watch = _backtest(client, "SELECT MIN(ask) FROM offers WHERE subject = 'office.supplies.pens'")
    html = watch.content.decode()
    assert 'data-backtest-count="1"' in html
    assert (
        re.findall(r'<tr data-n="1">.*?</tr>', html, re.S)[0].count("—") == 3
    )  # time, market, offer
    assert '<span class="alert-k">offer</span> <span class="alert-v">—</span>' in html
    assert "backtest-data" not in html  # no market to draw it on

    # A composite's data is nested by alias: shown as alias.attr
    append([trade("1.10", trade_id=1)])
    append([trade("1.20", trade_id=2)])
    pair = _backtest(
        client,
        "SELECT a.price, b.price FROM a AND b WHERE a.type = 'trade', b.type = 'trade', "
        "a.start_time = NOW - 1h, b.start_time = NOW - 1h, b.price > a.price",
    )
    html = pair.content.decode()
    assert 'data-backtest-count="1"' in html
    assert '<span class="alert-k">a.price</span> <span class="alert-v">1.10</span>' in html
    assert '<span class="alert-k">b.price</span> <span class="alert-v">1.20</span>' in html
