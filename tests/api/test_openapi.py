"""The OpenAPI schema is generated, committed, and must match the code."""

from __future__ import annotations

import io

from django.core.management import call_command

from tests.livestack import ROOT

COMMITTED = ROOT / "docs" / "openapi.yaml"


def test_committed_openapi_schema_matches_the_code():
    out = io.StringIO()
    call_command("spectacular", "--validate", stdout=out)
    assert out.getvalue() == COMMITTED.read_text(), (
        "the API changed: run `.venv/bin/python manage.py spectacular --file docs/openapi.yaml` "
        "and commit the diff"
    )


def test_interactive_docs_are_served_without_internet(client):
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower() and "https://" not in html
