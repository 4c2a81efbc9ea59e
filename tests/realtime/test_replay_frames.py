"""``replay.py``'s frames on their own (no database): runs bounded in items and bytes, and
a batch frame's text is exactly the JSON of its envelope with the list added."""

from __future__ import annotations

import json

import pytest

from exchange.realtime.replay import batch_flag, batch_frame, compact, frame_chunks


def test_runs_hold_at_most_the_item_count():
    texts = [str(i) for i in range(7)]
    assert list(frame_chunks(texts, items=3, size=10**6)) == [
        ["0", "1", "2"],
        ["3", "4", "5"],
        ["6"],
    ]


def test_runs_hold_at_most_the_byte_bound_past_their_first_item():
    # each text counts its length and one separator: "aaaa" is 5, so two make 10
    texts = ["aaaa", "bbbb", "c" * 20, "dd", "ee"]
    assert list(frame_chunks(texts, items=100, size=10)) == [
        ["aaaa", "bbbb"],
        ["c" * 20],  # larger than the bound: alone
        ["dd", "ee"],
    ]


def test_no_texts_make_no_run():
    assert list(frame_chunks([], items=2, size=10)) == []


def test_a_batch_frame_is_the_envelope_with_the_list_added():
    items = [{"seq": 3, "price": "1.10"}, {"seq": 4, "note": 'say "hi" \u00e9'}]
    envelope = {"stream": "events:office.>", "type": "batch", "seq": 4}
    text = batch_frame(envelope, "data", [compact(item) for item in items])
    assert text == compact({**envelope, "data": items})
    assert json.loads(text) == {**envelope, "data": items}


@pytest.mark.parametrize(
    ("message", "flag"),
    [
        ({}, False),
        ({"batch": True}, True),
        ({"batch": False}, False),
        ({"batch": 1}, None),
        ({"batch": "true"}, None),
        ({"batch": None}, None),
    ],
)
def test_the_batch_flag_is_a_boolean_or_absent(message, flag):
    assert batch_flag(message) is flag
