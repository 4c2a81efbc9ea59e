"""No module imports another that imports it back, directly or through others (issue 38):
``ops/test`` runs this after the import contracts, over exchange/, matching/, frontend/ and
ops/. Every import counts, those under ``if TYPE_CHECKING:`` and inside functions too: each
is a dependency a reader has to follow, and a function-level import that only hides a cycle
from Python is still one.

A cycle is a group of two or more modules each reachable from the others (a strongly
connected component of the import graph, built by grimp, which import-linter runs on). The
check fails on any group not in ``KNOWN`` and on an entry of ``KNOWN`` that is no longer a
group, so that the list only shrinks.

    .venv/bin/python ops/import_cycles.py
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("exchange", "matching", "frontend", "ops")

# Cycles allowed for now: none is left (issue 38). An entry here is a debt with its reason.
KNOWN: frozenset[frozenset[str]] = frozenset()


def cycles(imports: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The groups of two or more modules that import each other (Tarjan's algorithm,
    without recursion: a chain of imports may be longer than Python's stack allows).
    ``imports`` maps each module to the modules it imports directly."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(sorted(imports[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in imports:
                    continue  # outside the packages looked at
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(imports[target]))))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == module:
                        break
                if len(group) > 1:
                    found.append(frozenset(group))
    return found


def graph_imports(packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """Each module of ``packages`` (in this checkout) and the modules it imports."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # grimp finds the packages on the path
    graph = grimp.build_graph(*packages, cache_dir=None)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def problems(found: Iterable[frozenset[str]], known: frozenset[frozenset[str]]) -> list[str]:
    """What is wrong: each new cycle, then each known one that is gone."""
    found = set(found)
    lines = [
        "these modules import each other: " + ", ".join(sorted(group))
        for group in sorted(found - known, key=sorted)
    ]
    lines += [
        "no longer a cycle, remove it from KNOWN in ops/import_cycles.py: "
        + ", ".join(sorted(group))
        for group in sorted(known - found, key=sorted)
    ]
    return lines


def main() -> int:
    wrong = problems(cycles(graph_imports()), KNOWN)
    for line in wrong:
        print(line, file=sys.stderr)
    if not wrong:
        print(
            f"no import cycles but the {len(KNOWN)} known ones (ops/import_cycles.py)"
            if KNOWN
            else "no import cycles (ops/import_cycles.py)"
        )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
