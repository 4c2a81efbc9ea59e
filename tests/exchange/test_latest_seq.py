"""The one home of the latest-sequence query (issue 16): pages and the WebSocket's ``me``
stream both resume after ``notification_latest_seq``."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from exchange.models import Notification
from exchange.realtime import consumers
from exchange.selectors import ui
from exchange.selectors.orders import notification_latest_seq
from tests.factories import UserFactory, pencils_market

pytestmark = pytest.mark.django_db


def test_the_latest_seq_is_the_newest_own_personal_notification():
    market = pencils_market()
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    assert notification_latest_seq(user=alice) == 0
    own = Notification.objects.create(recipient=alice, market=market, type="x", data={})
    Notification.objects.create(recipient=bob, market=market, type="x", data={})
    Notification.objects.create(recipient=None, market=market, type="x", data={})
    assert notification_latest_seq(user=alice) == own.pk
    assert notification_latest_seq(user=AnonymousUser()) == 0


def test_callers_share_the_one_query():
    assert consumers._latest_seq.func is notification_latest_seq
    assert not hasattr(ui, "user_latest_seq")
