"""The one guide for bots (docs/api.md, issue 22 item 4): served as a page of the site, and
linked from the README, the footer of every page and the API's docs page (the schema's
description, which Swagger UI shows at its top)."""

from __future__ import annotations

import pytest
import yaml

from tests.livestack import ROOT

pytestmark = pytest.mark.django_db

SECTIONS = [
    "1. Authentication",
    "2. REST (<code>/api/v1/</code>)",
    "3. WebSocket (<code>/ws/</code>)",
    "4. Resuming after a drop",
    "5. Errors",
    "6. Idempotent creates",
    "7. Rate limits",
    "8. The constraint language in a page",
]


def test_the_guide_is_a_page_with_every_section(client):
    response = client.get("/docs/api/")
    assert response.status_code == 200
    page = response.content.decode()
    for number, title in enumerate(SECTIONS, start=1):
        assert f"<h2>{title}</h2>" in page, number
    assert "<table>" in page  # Markdown tables rendered as tables
    assert "<script" not in page.split('<article class="card guide"')[1].split("</article>")[0]
    assert '<a href="/docs/api/">Guide for bots</a>' in client.get("/").content.decode()


def test_the_readme_and_the_api_docs_link_to_it():
    assert "[docs/api.md](docs/api.md)" in (ROOT / "README.md").read_text()
    schema = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
    assert "[/docs/api/](/docs/api/)" in schema["info"]["description"]
