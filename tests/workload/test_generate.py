"""``generate``: the paper's workloads on Spark, reproducible to the byte (seed 000, section 5)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import matching
from matching.model import BoxEq, BoxOverlaps, Interval
from matching.workload import (
    EPSILON_UNITS,
    GRID,
    Workload,
    WorkloadError,
    fixed_top,
    generate,
    iter_items,
    read_manifest,
    terms,
    width_units,
)

SUBS, PUBS = 400, 3


def lines(path: Path) -> list[tuple[str, str]]:
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        text_id, tab, text = line.partition("\t")
        assert tab, line
        rows.append((text_id, text))
    return rows


def files_of(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def workloads(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("workloads")
    made = {}
    for kind in ("fixed", "proportional", "large_intermediate", "geometric"):
        made[kind] = generate(spark, Workload(kind, SUBS, PUBS, 7), root / kind).directory
    return made


@pytest.mark.parametrize("kind", ["fixed", "proportional", "large_intermediate", "geometric"])
def test_every_line_is_a_constraint_with_ids_one_to_n(
    workloads: dict[str, Path], kind: str
) -> None:
    directory = workloads[kind]
    for side, count in (("pubs", PUBS), ("subs", SUBS)):
        rows = lines(directory / f"{side}.txt")
        assert [i for i, _ in rows] == [str(n) for n in range(1, count + 1)]
        decoded = list(iter_items(directory, side))
        assert [i for i, _ in decoded] == list(range(1, count + 1))
        for (_, text), (_, constraint) in zip(rows, decoded, strict=True):
            assert matching.parse(text) == constraint


@pytest.mark.parametrize("kind", ["fixed", "proportional"])
def test_equality_values_lie_in_the_papers_range(workloads: dict[str, Path], kind: str) -> None:
    top = fixed_top(SUBS, PUBS) if kind == "fixed" else 100 * PUBS
    values = []
    for side in ("pubs", "subs"):
        for _, constraint in iter_items(workloads[kind], side):
            [disjunct] = constraint.disjuncts
            [(attribute, pred)] = disjunct.items
            assert (attribute.name, attribute.type.value) == ("x", "int")
            assert isinstance(pred, Interval) and pred.lo == pred.hi
            values.append(pred.lo)
    assert min(values) >= 1 and max(values) <= top
    assert len(set(values)) > len(values) // 4  # drawn, not constant


def test_large_intermediate_has_n_terms_of_zero_or_one(workloads: dict[str, Path]) -> None:
    n = terms(SUBS, PUBS)
    assert n == 8  # 1,200 pairs: 4.7 expected matches
    ones = 0
    for side in ("pubs", "subs"):
        for _, constraint in iter_items(workloads["large_intermediate"], side):
            [disjunct] = constraint.disjuncts
            assert [a.name for a, _ in disjunct.items] == [f"x{k}" for k in range(1, n + 1)]
            for _, pred in disjunct.items:
                assert isinstance(pred, Interval) and pred.lo == pred.hi and pred.lo in (0, 1)
                ones += pred.lo
    assert 0.4 < ones / (n * (SUBS + PUBS)) < 0.6  # each term matches about half


def test_geometric_boxes_lie_in_the_unit_square_with_the_papers_sizes(
    workloads: dict[str, Path],
) -> None:
    directory = workloads["geometric"]
    sizes = {"pubs": width_units(SUBS, PUBS), "subs": EPSILON_UNITS}
    kinds = {"pubs": BoxEq, "subs": BoxOverlaps}
    for side in ("pubs", "subs"):
        for (_, text), (_, constraint) in zip(
            lines(directory / f"{side}.txt"), iter_items(directory, side), strict=True
        ):
            [disjunct] = constraint.disjuncts
            [(attribute, pred)] = disjunct.items
            assert attribute.name == "b" and isinstance(pred, kinds[side])
            # The text holds exact decimals: the side is exactly the width in grid steps.
            x1, y1, x2, y2 = (Decimal(v) for v in text[text.index("(") + 1 : -1].split(", "))
            assert x2 - x1 == y2 - y1 == Decimal(sizes[side]) / GRID
            assert x1 >= 0 and y1 >= 0 and x2 <= 1 and y2 <= 1
            assert (pred.box.x1, pred.box.y2) == (float(x1), float(y2))


def test_manifest_records_the_parameters(workloads: dict[str, Path]) -> None:
    manifest = read_manifest(workloads["large_intermediate"])
    assert manifest["workload"]["kind"] == "large_intermediate"
    assert manifest["workload"]["parameters"] == {"terms": 8}
    assert manifest["files"]["subs"]["rows"] == SUBS
    assert json.loads((workloads["fixed"] / "manifest.json").read_text())["workload"][
        "parameters"
    ] == {"top": fixed_top(SUBS, PUBS)}


def test_parquet_holds_the_same_constraints_and_values(
    spark: Any, workloads: dict[str, Path]
) -> None:
    directory = workloads["fixed"]
    rows = spark.read.parquet((directory / "subs.parquet").as_uri()).orderBy("id").collect()
    assert [(str(r.id), r.constraint) for r in rows] == lines(directory / "subs.txt")
    assert all(r.constraint == f"int x = {r.x}" for r in rows)
    geo = spark.read.parquet((workloads["geometric"] / "pubs.parquet").as_uri()).collect()
    decoded = dict(iter_items(workloads["geometric"], "pubs"))
    for r in geo:
        box = decoded[r.id].disjuncts[0].items[0][1].box
        assert (r.x1, r.y1, r.x2, r.y2) == (box.x1, box.y1, box.x2, box.y2)


@pytest.mark.parametrize("kind", ["large_intermediate", "geometric"])
def test_same_seed_gives_byte_identical_files(
    spark: Any, workloads: dict[str, Path], tmp_path: Path, kind: str
) -> None:
    again = generate(spark, Workload(kind, SUBS, PUBS, 7), tmp_path / "again").directory
    assert files_of(again) == files_of(workloads[kind])
    assert any(name.startswith("subs.parquet/part-") for name in files_of(again))


def test_another_seed_gives_other_values(
    spark: Any, workloads: dict[str, Path], tmp_path: Path
) -> None:
    other = generate(spark, Workload("fixed", SUBS, PUBS, 8), tmp_path / "other").directory
    assert lines(other / "subs.txt") != lines(workloads["fixed"] / "subs.txt")


def test_generating_over_a_previous_workload_replaces_it(spark: Any, tmp_path: Path) -> None:
    generate(spark, Workload("fixed", 50, 2, 1), tmp_path / "w")
    generate(spark, Workload("proportional", 20, 1, 1), tmp_path / "w")
    assert len(lines(tmp_path / "w" / "subs.txt")) == 20
    assert read_manifest(tmp_path / "w")["workload"]["kind"] == "proportional"
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == [
        "manifest.json",
        "pubs.parquet",
        "pubs.txt",
        "subs.parquet",
        "subs.txt",
    ]


def test_a_directory_with_other_files_is_refused(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(WorkloadError, match="other files"):
        generate(spark, Workload("fixed", 10, 1, 1), tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
