"""Schema-based fuzzing of every endpoint (schemathesis): no input produces a 500."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.livestack import ROOT

schema = schemathesis.openapi.from_path(str(ROOT / "docs" / "openapi.yaml"))
# The feed import takes JSON lines as text; without these its JSON-lines bodies are skipped.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
schemathesis.serializer.alias("application/jsonl", "text/plain")


@pytest.fixture
def app():
    # As Django's test client does: keep the test's connection (and its transaction) open
    # across requests instead of closing it when a request finishes.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_makes_a_server_error(case, app, world):
    # As the seller (a real account with orders), so that authenticated paths are reached too.
    token = world["clients"]["seller"]._credentials["HTTP_AUTHORIZATION"]
    case.call_and_validate(app=app, headers={"Authorization": token}, checks=[not_a_server_error])
