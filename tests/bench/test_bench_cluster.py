"""The live and stack benchmarks drop and create databases of their own: only on this
checkout's development cluster, never on one another checkout started on the same port."""

from __future__ import annotations

from pathlib import Path

import pytest

from ops.benchmarks.live import provision

URL = "postgres://intersect:intersect@127.0.0.1:55999/intersect"


def _socket_at(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()


def test_this_checkouts_cluster_is_used(tmp_path: Path):
    _socket_at(tmp_path / ".data" / "dev" / "pg-run" / ".s.PGSQL.55999")
    assert provision.foreign_cluster(URL, tmp_path) is None


def test_a_cluster_kept_outside_the_checkout_is_found_through_its_link(tmp_path: Path):
    outside = tmp_path / "elsewhere"
    _socket_at(outside / "pg-run" / ".s.PGSQL.55999")
    (tmp_path / ".data" / "dev").mkdir(parents=True)
    (tmp_path / ".data" / "dev" / "pg.link").symlink_to(outside)
    assert provision.foreign_cluster(URL, tmp_path) is None


def test_another_checkouts_cluster_on_the_port_is_refused_with_the_way_out(tmp_path: Path):
    _socket_at(tmp_path / ".data" / "dev" / "pg-run" / ".s.PGSQL.55472")
    problem = provision.foreign_cluster(URL, tmp_path)
    assert problem is not None
    assert problem.startswith("the PostgreSQL on 127.0.0.1:55999 is not this checkout's")
    assert "BENCH_DATABASE_URL" in problem


def test_a_named_cluster_is_the_callers_choice(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BENCH_DATABASE_URL", URL)
    provision.cluster_check()  # no socket of this checkout on 55999, and no refusal
    monkeypatch.delenv("BENCH_DATABASE_URL")
    monkeypatch.setattr(provision, "SERVER_URL", URL)
    with pytest.raises(SystemExit, match="127.0.0.1:55999 is not this checkout's"):
        provision.cluster_check()
