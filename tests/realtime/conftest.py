"""In-process WebSocket tests run their matching cycles themselves (``matching_cycle_run``).

A live stack started earlier in the same pytest run (browser and stack tests) has a real
Celery worker on this run's queue and database: left alone, it would take the cycle requests
these tests' orders make, run cycles and push frames beside the test, and hold locks while the
test database is flushed (a deadlock at teardown). Switching the requests off makes every test
here behave as it does when its module runs alone, where no worker exists.
"""

from __future__ import annotations

import pytest

from exchange.services import orders as order_service


@pytest.fixture(autouse=True)
def no_cycle_requests(monkeypatch):
    monkeypatch.setattr(order_service, "matching_cycle_request", lambda _market: None)
