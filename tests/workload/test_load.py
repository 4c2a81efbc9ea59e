"""``manage.py workload generate|load``: a workload round trip into both PostgreSQL strategies."""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from matching.store import MemoryStore, open_store
from matching.workload import iter_items


@pytest.fixture
def namespaces(workload_conninfo: str) -> Any:
    made: list[tuple[str, str]] = []

    def name(strategy: str) -> str:
        ns = f"test_wl_{uuid.uuid4().hex[:12]}"
        made.append((strategy, ns))
        return ns

    yield name
    with psycopg.connect(workload_conninfo, autocommit=True) as conn:
        for strategy, ns in made:
            open_store(conn, strategy=strategy, namespace=ns).drop()


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("workload", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("kind", ["large_intermediate", "geometric"])
def test_generate_then_load_round_trip(
    spark: Any,
    tmp_path: Path,
    workload_conninfo: str,
    django_db_blocker: Any,
    namespaces: Any,
    kind: str,
) -> None:
    directory = tmp_path / kind
    said = run(
        "generate",
        "--kind",
        kind,
        "--subs",
        "300",
        "--pubs",
        "4",
        "--seed",
        "3",
        "--out",
        str(directory),
    )
    assert f"{kind}: 300 subscriptions, 4 publications, seed 3" in said

    memory = MemoryStore()
    memory.add_publications(iter_items(directory, "pubs"))
    memory.add_subscriptions(iter_items(directory, "subs"))
    expected = memory.match_all()

    for strategy in ("paper", "range"):
        ns = namespaces(strategy)
        with django_db_blocker.unblock():
            said = run("load", str(directory), "--strategy", strategy, "--namespace", ns)
        assert said.startswith(
            f"loaded 4 publications and 300 subscriptions ({kind}) into {ns} ({strategy})"
        )
        assert "indexes" in said and "statistics" in said
        with psycopg.connect(workload_conninfo, autocommit=True) as conn:
            store = open_store(conn, strategy=strategy, namespace=ns)
            assert store.match_all() == expected
            assert store.match_publications([1, 2]) == {p for p in expected if p[0] in (1, 2)}


def test_load_refuses_an_existing_namespace_unless_replacing(
    spark: Any, tmp_path: Path, django_db_blocker: Any, workload_conninfo: str, namespaces: Any
) -> None:
    directory = tmp_path / "w"
    run("generate", "--kind", "fixed", "--subs", "50", "--pubs", "2", "--out", str(directory))
    ns = namespaces("paper")
    with django_db_blocker.unblock():
        run("load", str(directory), "--strategy", "paper", "--namespace", ns)
        with pytest.raises(CommandError, match="already exists"):
            run("load", str(directory), "--strategy", "paper", "--namespace", ns)
        said = run("load", str(directory), "--strategy", "paper", "--namespace", ns, "--replace")
    assert "loaded 2 publications and 50 subscriptions" in said
    with psycopg.connect(workload_conninfo, autocommit=True) as conn:
        count = conn.execute(f'SELECT count(*) FROM "{ns}".sub_master').fetchone()[0]
    assert count == 50  # replaced, not appended


def test_load_of_a_directory_without_a_workload_is_an_error(
    tmp_path: Path, django_db_blocker: Any, workload_conninfo: str
) -> None:
    with django_db_blocker.unblock(), pytest.raises(CommandError, match="not a workload"):
        run("load", str(tmp_path), "--strategy", "range", "--namespace", "test_wl_none")
