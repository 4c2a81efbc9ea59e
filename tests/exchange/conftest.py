import pytest


@pytest.fixture(params=["range", "paper"])
def strategy(request, settings):
    """Exchange tests that match run once with each constraint-store strategy
    (modules opt in with ``pytest.mark.usefixtures("strategy")``)."""
    settings.MATCHING_STRATEGY = request.param
    return request.param
