"""``manage.py match_files --strategy spark`` (SPEC 4): the same output as every strategy."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from django.core.management import call_command

import matching.spark
from tests.store.test_match_files import EXPECTED, PUBS, SUBS


def _run(*args: str) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("match_files", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return out.getvalue(), err.getvalue(), code


def test_exact_output_for_a_small_file_pair(spark: Any, tmp_path: Path) -> None:
    pubs, subs = tmp_path / "pubs.txt", tmp_path / "subs.txt"
    pubs.write_text(PUBS, encoding="utf-8")
    subs.write_text(SUBS, encoding="utf-8")

    assert _run(str(pubs), str(subs), "--strategy", "spark") == (EXPECTED, "", 0)

    # --out writes the same lines to a file
    target = tmp_path / "pairs.txt"
    assert _run(str(pubs), str(subs), "--strategy", "spark", "--out", str(target)) == ("", "", 0)
    assert target.read_text(encoding="utf-8") == EXPECTED


def test_bad_lines_are_reported_before_spark_is_asked(tmp_path: Path, monkeypatch: Any) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Spark must not run when a line is bad")

    monkeypatch.setattr(matching.spark, "match_parsed", fail)
    pubs, subs = tmp_path / "pubs.txt", tmp_path / "subs.txt"
    pubs.write_text("1\tx = \n", encoding="utf-8")
    subs.write_text("a\tx = 1\n", encoding="utf-8")

    out, err, code = _run(str(pubs), str(subs), "--strategy", "spark")

    assert (out, code) == ("", 2)
    assert err.startswith(f"{pubs}:1:")


def test_the_spark_master_comes_from_the_settings(
    tmp_path: Path, monkeypatch: Any, settings: Any
) -> None:
    seen: dict[str, Any] = {}

    def fake(pubs: Any, subs: Any, *, master: str) -> set[tuple[str, str]]:
        seen["master"] = master
        return {("1", "a")}

    monkeypatch.setattr(matching.spark, "match_parsed", fake)
    settings.SPARK_MASTER = "spark://cluster.example:7077"
    pubs, subs = tmp_path / "pubs.txt", tmp_path / "subs.txt"
    pubs.write_text("1\tx = 1\n", encoding="utf-8")
    subs.write_text("a\tx = 1\n", encoding="utf-8")

    assert _run(str(pubs), str(subs), "--strategy", "spark") == ("1\ta\n", "", 0)
    assert seen == {"master": "spark://cluster.example:7077"}
