"""``ops/bench``'s command line: each benchmark run alone is a subcommand, and the older
``--NAME-only`` flags, which the reports in docs/ quote, are the same subcommand."""

from __future__ import annotations

from pathlib import Path

import pytest

from ops.benchmarks.run import ALONE, parse_args


def _picked(argv: list[str]) -> dict[str, object]:
    args = vars(parse_args(argv))
    names = ("command", "quick", "out", "from_json", "live_json", "load_json", "watches")
    return {name: args[name] for name in names if name in args}


def test_no_subcommand_is_the_whole_run():
    assert _picked(["--quick", "--out", "o"]) == {
        "command": None,
        "quick": True,
        "out": Path("o"),
        "from_json": None,
        "live_json": None,
        "load_json": None,
    }


@pytest.mark.parametrize("name", sorted(set(ALONE) - {"live"}))
def test_each_subcommand_takes_quick_out_and_from_json(name):
    argv = ["--quick", "--out", "o", "--from-json", "r.json"]

    picked = _picked([name, *argv])

    assert (picked["command"], picked["quick"], picked["out"]) == (name, True, Path("o"))
    assert picked["from_json"] == Path("r.json")
    assert _picked([f"--{name}-only", *argv]) == picked


def test_an_option_before_the_subcommand_is_kept():
    assert _picked(["--quick", "patterns"])["quick"] is True
    assert _picked(["patterns"])["quick"] is False


def test_dissemination_takes_its_watches():
    assert _picked(["dissemination", "--watches", "500"])["watches"] == 500
    assert _picked(["--dissemination-only", "--watches", "500"])["watches"] == 500
    assert _picked(["dissemination"])["watches"] is None


def test_live_takes_its_result_files():
    argv = ["--live-json", "a.json", "--load-json", "b.json", "--out", "o"]

    picked = _picked(["live", *argv])

    assert picked["command"] == "live"
    assert (picked["live_json"], picked["load_json"], picked["out"]) == (
        Path("a.json"),
        Path("b.json"),
        Path("o"),
    )
    assert _picked(["--live-only", *argv]) == picked


def test_two_benchmarks_alone_at_once_are_refused():
    with pytest.raises(SystemExit, match="--live-only and --index-only name two benchmarks"):
        parse_args(["--live-only", "--index-only"])


def test_an_option_a_subcommand_does_not_take_is_refused(capsys):
    with pytest.raises(SystemExit):
        parse_args(["live", "--quick"])

    assert "unrecognized arguments: --quick" in capsys.readouterr().err
