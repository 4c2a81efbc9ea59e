"""Mistakes in a query that parse, or that the parser names badly, told as such (issue 39):
a test on a closed set's attribute that no event can pass (refused where the exchange
accepts queries, accepted by SPEC 8.3's reading, which ``subscription_run`` follows) and a
misspelt keyword or attribute with the nearest one named."""

from __future__ import annotations

import pytest

from matching.subscriptions import QueryError, parse_query
from matching.subscriptions.language.checked import parse_query_checked

TYPES = (
    "best_offer, bid_amended, bid_filled, bid_placed, bid_withdrawn, offer_amended, "
    "offer_cancelled, offer_closed, offer_posted, offer_withdrawn, trade"
)


def refusal(text: str, *, checked: bool = True) -> tuple[str, int, str]:
    with pytest.raises(QueryError) as raised:
        (parse_query_checked if checked else parse_query)(text)
    return raised.value.code, raised.value.position, raised.value.message


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        (
            "SELECT * WHERE type = 'trades'",
            22,
            f"no event has type 'trades': did you mean 'trade'? (type is one of {TYPES})",
        ),
        (
            "SELECT * WHERE price > 1, outcome = 'sould'",
            36,
            "no event has outcome 'sould': did you mean 'sold'? (outcome is one of sold, unsold)",
        ),
        (
            "SELECT * WHERE (type = 'trade' OR type = 'bid_place')",
            41,
            f"no event has type 'bid_place': did you mean 'bid_placed'? (type is one of {TYPES})",
        ),
        (
            "SELECT * WHERE type = 'nothing_like_it'",
            22,
            f"no event has type 'nothing_like_it' (type is one of {TYPES})",
        ),
        (
            "SELECT * WHERE type > 'trade'",
            15,
            f"no event passes this condition on type (type is one of {TYPES})",
        ),
        (
            "SELECT * WHERE type IN ('trade', 'trades')",
            15,
            f"no event passes this condition on type (type is one of {TYPES}); IN ('a', 'b') "
            "is every value between a and b, for a list write (type = 'a' OR type = 'b')",
        ),
        (
            "SELECT a.price FROM a AND b WHERE a.type = 'trades', b.offer = a.offer",
            43,
            f"no event has type 'trades': did you mean 'trade'? (type is one of {TYPES})",
        ),
        (
            "SELECT a.price FROM FILTER{type = 'trad'}(EVENTS) AS a "
            "NEXT{b.price > a.price} EVENTS AS b",
            34,
            f"no event has type 'trad': did you mean 'trade'? (type is one of {TYPES})",
        ),
    ],
)
def test_a_test_no_event_can_pass_is_refused_where_it_is_written(text, position, message):
    assert refusal(text) == ("never_matches", position, message)
    # SPEC 8.3's reading accepts it (it notifies nothing)
    assert parse_query(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * WHERE type = 'trade'",
        "SELECT * WHERE type != 'trade'",  # the half above 'trade' is empty, the other is not
        "SELECT * WHERE type > 'offer'",
        "SELECT * WHERE (type = 'trade' OR price > 1)",
        "SELECT * WHERE outcome IN ['sold', 'unsold']",
        "SELECT * WHERE subject MATCHES 'office.>'",
    ],
)
def test_tests_some_event_can_pass_are_accepted(text):
    assert parse_query_checked(text) == parse_query(text)


@pytest.mark.parametrize(
    ("text", "position", "ending"),
    [
        ("SELCT * WHERE type = 'trade'", 0, "found the name SELCT (did you mean SELECT?)"),
        ("SELECT * WHER type = 'trade'", 9, "found the name WHER (did you mean WHERE?)"),
        (
            "SELECT * WHERE type = 'trade' GRUP BY subject",
            30,
            "found the name GRUP (did you mean GROUP?)",
        ),
        ("SELECT * FROM a NXT b WHERE a.type = 'trade'", 16, "(did you mean NEXT?)"),
    ],
)
def test_a_misspelt_keyword_is_named(text, position, ending):
    code, where, message = refusal(text, checked=False)
    assert (code, where) == ("syntax", position)
    assert message.endswith(ending)


def test_a_misspelt_attribute_is_named():
    code, where, message = refusal("SELECT * WHERE typ = 'trade'", checked=False)
    assert (code, where) == ("unknown_attribute", 15)
    assert message.startswith("unknown attribute typ: did you mean type? the attributes are ask,")


def test_a_name_far_from_every_keyword_gets_no_guess():
    _, _, message = refusal("SELECT * WHERE type = 'trade' ZZZZZ", checked=False)
    assert "did you mean" not in message
