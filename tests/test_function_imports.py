"""``ops/function_imports.py``, the check ``ops/test`` runs: every import inside a function
says, in a comment, why it is not at the top (issue 38)."""

from __future__ import annotations

import textwrap

from tests.ops_scripts import load, run

function_imports = load("function_imports")


def unexplained(source: str) -> list[int]:
    return function_imports.unexplained(textwrap.dedent(source))


def test_a_function_level_import_without_a_comment_is_reported_with_its_line():
    source = """
        import os


        def f():
            import json

            return json, os
    """

    assert unexplained(source) == [6]


def test_a_comment_above_or_beside_the_import_is_its_reason():
    source = """
        def f():
            # pyspark only when a job runs
            from pyspark.sql import functions as F

            return F


        def g():
            from . import printer  # a cycle: printer imports this module

            return printer
    """

    assert unexplained(source) == []


def test_a_run_of_imports_shares_the_comment_above_its_first_but_a_later_run_does_not():
    source = """
        def f():
            # Django's: after django.setup()
            from django.db import connection

            from exchange.models import Market
            x = 1
            from exchange.services import orders

            return connection, Market, orders, x
    """

    assert unexplained(source) == [8]


def test_a_tool_directive_alone_is_not_a_reason_but_one_with_a_reason_is():
    source = """
        def f():
            import a  # noqa: F401
            import b  # type: ignore[import-not-found]
            import c  # noqa: F401 - imported for its side effect
            import d  # type: ignore[import-not-found]  # no stubs
    """

    assert unexplained(source) == [3, 4]


def test_imports_in_nested_blocks_methods_and_closures_count_and_module_level_ones_do_not():
    source = """
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from decimal import Decimal


        class A:
            def m(self):
                if self:
                    import json
                try:
                    pass
                finally:
                    import os

                def inner():
                    import re

                return json, os, inner
    """

    assert unexplained(source) == [11, 15, 18]


def test_a_comment_inside_a_string_is_not_a_reason():
    source = """
        def f():
            text = "# not a comment"
            import json

            return text, json
    """

    assert unexplained(source) == [4]


def test_this_checkout_gives_every_function_level_import_its_reason():
    done = run("function_imports")

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "every function-level import gives its reason (ops/function_imports.py)\n"
    )
