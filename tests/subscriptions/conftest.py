import pytest

from tests.conftest import live_engines_stop


@pytest.fixture(autouse=True)
def _session_engines_stopped():
    """The tests here advance subscriptions themselves (``tests/subscriptions/log.py``):
    the session stack's engine processes, if an earlier test started them, are stopped
    first, or they would read the test's events before it looks (a subscription told
    ``lagging`` was found caught up when a stack test had run before it). The next test
    that uses the live stack starts them again."""
    live_engines_stop()
