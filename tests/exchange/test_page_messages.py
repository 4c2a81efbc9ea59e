"""Django's messages serve the pages and the staff console; API requests go without them
(``exchange.middleware.PageMessageMiddleware``)."""

from __future__ import annotations

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpRequest

pytestmark = pytest.mark.django_db


def waiting_cookie(text: str) -> str:
    """The ``messages`` cookie a page leaves when it adds ``text`` for the next page."""
    storage = CookieStorage(HttpRequest())
    return storage._encode([Message(constants.INFO, text)])


def test_an_api_request_has_no_message_storage_and_a_page_has_one(client):
    api = client.get("/api/v1/markets/")
    page = client.get("/")
    assert (api.status_code, page.status_code) == (200, 200)
    assert not hasattr(api.wsgi_request, "_messages")
    assert hasattr(page.wsgi_request, "_messages")


def test_a_message_waiting_for_the_next_page_outlives_api_requests(client):
    client.cookies["messages"] = waiting_cookie("Saved.")
    api = client.get("/api/v1/markets/")
    assert api.status_code == 200
    page = client.get("/")
    assert [m.message for m in page.wsgi_request._messages] == ["Saved."]
