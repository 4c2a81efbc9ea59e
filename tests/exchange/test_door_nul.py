"""A NUL in the address is answered 400 at the door (``RejectNulMiddleware``), as JSON
wherever the other error answers are JSON (``exchange.http.wants_json``), else as text."""

from __future__ import annotations

import pytest

MESSAGE = "The address contains a NUL character."


@pytest.mark.parametrize(
    "path", ["/api/v1/markets/?q=%00", "/markets/office.supplies.pencils/check/?x=a%00b"]
)
def test_on_the_json_endpoints_the_answer_is_the_error_body(client, path):
    response = client.get(path)
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "bad_request", "message": MESSAGE}}


def test_on_a_page_the_answer_is_text(client):
    response = client.get("/markets/?q=%00")
    assert response.status_code == 400
    assert response.content.decode() == MESSAGE
