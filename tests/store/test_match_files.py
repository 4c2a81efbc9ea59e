"""``manage.py match_files`` (SPEC 4): output format, sorting, errors, scratch isolation."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command

from tests.livestack import ROOT

PUBS = """\
# offers
10\tx = 1
9\tx < 5 AND y = 1

2\tb = BOX(0, 0, 1, 1)
"""

SUBS = """\
a\tx = 1 AND y = 1
b\tx < 6 AND y = 3
c\tx < 4 AND y < 2
#\tnot a constraint
d\tb OVERLAPS BOX(1, 1, 2, 2)
e\tint x = * AND int y = *
"""

# Sorted by publication id, then subscription id, comparing ids as text ("10" < "2" < "9").
EXPECTED = "10\ta\n10\tb\n10\tc\n10\te\n2\td\n9\ta\n9\tc\n9\te\n"


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _run(*args: str) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("match_files", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return out.getvalue(), err.getvalue(), code


@pytest.mark.parametrize("strategy", ["range", "paper", "memory"])
def test_exact_output_for_a_small_file_pair(
    store_conninfo: str, tmp_path: Path, strategy: str
) -> None:
    pubs, subs = _write(tmp_path, "pubs.txt", PUBS), _write(tmp_path, "subs.txt", SUBS)
    assert _run(pubs, subs, "--strategy", strategy) == (EXPECTED, "", 0)


def test_out_writes_the_pairs_to_a_file(store_conninfo: str, tmp_path: Path) -> None:
    pubs, subs = _write(tmp_path, "pubs.txt", PUBS), _write(tmp_path, "subs.txt", SUBS)
    target = tmp_path / "pairs.tsv"
    assert _run(pubs, subs, "--out", str(target)) == ("", "", 0)
    assert target.read_text(encoding="utf-8") == EXPECTED


def test_the_scratch_schema_is_dropped_and_nothing_else_touched(
    store_conninfo: str, tmp_path: Path
) -> None:
    def schemas() -> set[str]:
        with psycopg.connect(store_conninfo) as conn:
            rows = conn.execute("SELECT nspname FROM pg_namespace").fetchall()
        return {name for (name,) in rows}

    before = schemas()
    pubs, subs = _write(tmp_path, "pubs.txt", PUBS), _write(tmp_path, "subs.txt", SUBS)
    for strategy in ("range", "paper"):
        assert _run(pubs, subs, "--strategy", strategy)[2] == 0
    assert schemas() == before


BAD_PUBS = "1\tx = 1\n2\tx = = 1\n3 no tab here\n\n\tx = 1\n1\tx = 2\n"
BAD_SUBS = "s\tx BETWEEN 5 AND 1\ntt\tx = 1 AND\n"


def test_every_bad_line_is_reported_with_line_and_column(tmp_path: Path) -> None:
    pubs = _write(tmp_path, "pubs.txt", BAD_PUBS)
    subs = _write(tmp_path, "subs.txt", BAD_SUBS)
    out, err, code = _run(pubs, subs, "--strategy", "memory")
    assert (out, code) == ("", 2)
    lines = err.splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        f"{pubs}:2:7",  # "2<TAB>x = = 1": the second "=" is character 7 of the line
        f"{pubs}:3:1",  # no TAB
        f"{pubs}:5:1",  # empty id
        f"{pubs}:6:1",  # id 1 again
        f"{subs}:1:3",  # an empty range, reported at its start
        f"{subs}:2:13",  # the text ends where a condition should follow AND
    ]
    assert "line 1" in lines[3]


def test_from_the_command_line_errors_exit_2_with_nothing_on_stdout(tmp_path: Path) -> None:
    pubs = _write(tmp_path, "pubs.txt", "1\tx = 1\n2\tx <\n")
    subs = _write(tmp_path, "subs.txt", "a\tx = 1\n")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "exchange.settings.test"}
    done = subprocess.run(
        [sys.executable, "manage.py", "match_files", pubs, subs],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"{pubs}:2:6: ")
    assert len(done.stderr.splitlines()) == 1


def test_a_value_too_large_for_the_store_is_a_bad_line(tmp_path: Path, store_conninfo: Any) -> None:
    long = "y" * 1001
    pubs = _write(tmp_path, "pubs.txt", f"1\ts = '{long}'\n")
    subs = _write(tmp_path, "subs.txt", "a\ts > 'x'\n")
    out, err, code = _run(pubs, subs, "--strategy", "range")
    assert (out, code) == ("", 2)
    assert err.startswith(f"{pubs}:1:3: a string compared with s is longer than 1000 bytes")
    # The oracle has no such limit
    assert _run(pubs, subs, "--strategy", "memory") == ("1\ta\n", "", 0)
