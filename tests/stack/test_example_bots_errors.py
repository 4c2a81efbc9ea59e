"""How the two example bots report an API error, without a server: the status, the code, the
message and, when the API gives a 0-based ``position``, the character counted from 1 as a
person reads it."""

from __future__ import annotations

import httpx
import pytest

from tests.stack.examples import load_example

CHECKERS = [load_example("bot").Bot._ok, load_example("subscription_bot").Api._ok]


@pytest.mark.parametrize("ok", CHECKERS, ids=["bot", "subscription_bot"])
def test_an_error_with_a_position_names_the_character_counted_from_one(ok):
    error = {"code": "off_tick", "message": "Use a multiple of 0.01.", "position": 0}
    response = httpx.Response(400, json={"error": error})

    with pytest.raises(SystemExit) as exit_:
        ok(response)

    assert str(exit_.value) == "400 off_tick: Use a multiple of 0.01. (at character 1)"


@pytest.mark.parametrize("ok", CHECKERS, ids=["bot", "subscription_bot"])
def test_an_error_without_a_position_names_no_character(ok):
    response = httpx.Response(404, json={"error": {"code": "not_found", "message": "No bid."}})

    with pytest.raises(SystemExit) as exit_:
        ok(response)

    assert str(exit_.value) == "404 not_found: No bid."


@pytest.mark.parametrize("ok", CHECKERS, ids=["bot", "subscription_bot"])
def test_a_success_is_its_json_body(ok):
    assert ok(httpx.Response(200, json={"id": 7})) == {"id": 7}
