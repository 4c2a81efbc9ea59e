"""A 404 for an address nothing serves (exchange/views/errors.py): the same answers as
before, JSON under /api/ and Django's page elsewhere, and no "Not Found" warning from
``django.request`` (the server's access log has every request with its status)."""

from __future__ import annotations

import logging

import pytest


@pytest.mark.django_db
def test_an_api_address_nothing_serves_is_a_json_404_not_logged(client, caplog):
    with caplog.at_level(logging.INFO, logger="django.request"):
        answer = client.get("/api/v1/no-such-page/")
    assert answer.status_code == 404
    assert answer.json() == {
        "error": {"code": "not_found", "message": "There is nothing at this address."}
    }
    assert [r for r in caplog.records if r.name == "django.request"] == []


@pytest.mark.django_db
def test_a_page_nothing_serves_is_an_html_404_not_logged(client, caplog):
    with caplog.at_level(logging.INFO, logger="django.request"):
        answer = client.get("/no-such-page/")
    assert answer.status_code == 404
    assert answer["Content-Type"].startswith("text/html")
    assert [r for r in caplog.records if r.name == "django.request"] == []


@pytest.mark.django_db
def test_other_client_errors_are_still_logged(client, caplog):
    with caplog.at_level(logging.INFO, logger="django.request"):
        answer = client.post("/api/v1/bids/", {}, content_type="application/json")
    assert answer.status_code in (401, 403)
    assert [r.levelname for r in caplog.records if r.name == "django.request"] == ["WARNING"]
