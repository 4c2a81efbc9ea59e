import pytest
from django.db import transaction

from exchange import engine
from tests.conftest import hold_flush_guard


@pytest.fixture
def clean_engine(transactional_db):
    """Committed tests share the engine's stores: empty them before each such test (Django's
    flush only truncates Django's own tables)."""

    def empty():
        with transaction.atomic():
            for name in engine.STRATEGIES:
                store = engine.store(name)
                store.drop()
                store.create()

    empty()
    yield
    empty()
    hold_flush_guard()
