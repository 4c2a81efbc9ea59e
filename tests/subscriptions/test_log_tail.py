"""The subscription engine's live read of the log (``subscriptions_log_tail``): the log's end
and the events after a cursor, as the plain read gives them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from exchange.selectors.events import events_log_end
from exchange.selectors.subscription_log import subscriptions_log_read, subscriptions_log_tail

from .log import append, bid_placed, trade

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_empty_log_ends_at_zero_with_no_events():
    assert subscriptions_log_tail(after=0, most=10) == (0, [])


def test_the_tail_is_the_plain_read_up_to_the_end_or_the_batch():
    buyer = User.objects.create_user("tail-buyer")
    append([trade("1.00", trade_id=1), bid_placed(buyer.pk, 7, "1.10")])
    append([trade(f"1.{i:02d}", trade_id=2 + i) for i in range(6)])
    end = events_log_end()
    assert end == 8
    every = subscriptions_log_read(after=0, upto=end)
    assert [event["seq"] for _, event in every] == list(range(1, 9))
    assert every[1][0] == buyer.pk and every[1][1]["type"] == "bid_placed"
    assert [owner for owner, _ in every if owner is not None] == [buyer.pk]
    # Every window a batch can ask for, past the end too.
    for after in range(end + 1):
        for most in (1, 3, 100):
            assert subscriptions_log_tail(after=after, most=most) == (
                end,
                every[after : min(end, after + most)],
            ), (after, most)
