"""``ops/import_cycles.py``, the check ``ops/test`` runs: no module imports another that
imports it back (issue 38), but the known cycles it lists."""

from __future__ import annotations

import sys

from tests.ops_scripts import load, run

import_cycles = load("import_cycles")


def test_two_modules_that_import_each_other_are_a_cycle():
    imports = {"a": {"b"}, "b": {"a", "c"}, "c": set()}

    assert import_cycles.cycles(imports) == [frozenset({"a", "b"})]


def test_a_longer_loop_is_one_cycle_and_a_chain_is_none():
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set()}

    assert import_cycles.cycles(imports) == [frozenset({"a", "b", "c"})]
    assert import_cycles.cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_imports_of_modules_outside_the_graph_are_left_out():
    assert import_cycles.cycles({"a": {"django", "b"}, "b": {"django"}}) == []


def test_a_chain_longer_than_python_s_stack_is_walked():
    n = 5 * sys.getrecursionlimit()
    imports = {f"m{i}": {f"m{i + 1}"} for i in range(n)} | {f"m{n}": {"m0"}}

    (group,) = import_cycles.cycles(imports)

    assert len(group) == n + 1


def test_a_new_cycle_and_a_stale_known_one_are_both_reported():
    known = frozenset({frozenset({"x", "y"}), frozenset({"p", "q"})})
    found = [frozenset({"x", "y"}), frozenset({"a", "b"})]

    assert import_cycles.problems(found, known) == [
        "these modules import each other: a, b",
        "no longer a cycle, remove it from KNOWN in ops/import_cycles.py: p, q",
    ]


def test_a_known_pair_inside_a_larger_cycle_is_a_new_cycle():
    known = frozenset({frozenset({"x", "y"})})

    assert import_cycles.problems([frozenset({"x", "y", "z"})], known) == [
        "these modules import each other: x, y, z",
        "no longer a cycle, remove it from KNOWN in ops/import_cycles.py: x, y",
    ]


def test_this_checkout_has_no_import_cycle():
    done = run("import_cycles")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "no import cycles (ops/import_cycles.py)\n"
