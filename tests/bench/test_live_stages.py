"""The live bench's breakdown of a bid's time to its frame into stages."""

from __future__ import annotations

import pytest

from ops.benchmarks.live.checks import STAGES, stage_split


def test_each_stage_runs_from_the_previous_mark() -> None:
    timeline: list[dict[str, float | int]] = [
        {"id": 7, "post": 100.000, "ack": 100.030, "frame": 100.250},
        {"id": 8, "post": 100.010, "ack": 100.020, "frame": 100.300},
    ]
    marks = {7: (100.020, 100.060, 100.160), 8: (100.015, 100.160, 100.200)}
    split = stage_split(timeline, marks)
    assert list(split) == [name for name, _ in STAGES]
    assert split["request"] == pytest.approx([20.0, 5.0])
    assert split["queue"] == pytest.approx([40.0, 145.0])
    assert split["cycle"] == pytest.approx([100.0, 40.0])
    assert split["push"] == pytest.approx([90.0, 100.0])
    # The stages add up to the bid's whole time to its frame.
    assert sum(v[0] for v in split.values()) == pytest.approx(250.0)


def test_a_bid_without_a_cycle_is_left_out() -> None:
    timeline: list[dict[str, float | int]] = [
        {"id": 7, "post": 1.0, "ack": 1.1, "frame": 1.5},
        {"id": 9, "post": 1.0, "ack": 1.1, "frame": 1.6},
    ]
    split = stage_split(timeline, {9: (1.2, 1.3, 1.4)})
    assert split["request"] == pytest.approx([200.0])
    assert split["push"] == pytest.approx([200.0])
