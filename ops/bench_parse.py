"""Parse-and-normalize throughput of the constraint language (issue 3's benchmark).

    .venv/bin/python ops/bench_parse.py [--n 1000000] [--chunk 100000]

Two shapes: the paper's fixed workload (``x = R``, R varying) and a four-predicate
pencil bid. Texts are generated in chunks outside the timed region; only
``matching.parse`` (tokenize, parse, type-check, normalize) is timed. Prints
constraints per second for each shape. A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from matching import parse


def fixed(rng: random.Random, n: int) -> list[str]:
    return [f"x = {rng.randint(1, 200_000)}" for _ in range(n)]


def pencil_bid(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        lo = rng.randint(1, 50) * 100
        hi = lo + rng.randint(1, 50) * 100
        price = f"{rng.randint(50, 150) / 100:.2f}"
        day = rng.randint(1, 28)
        out.append(
            f"topic = 'pencils' AND lot BETWEEN {lo} AND {hi} AND price <= {price} "
            f"AND date delivery >= DATE '2026-12-{day:02d}'"
        )
    return out


SHAPES: dict[str, Callable[[random.Random, int], list[str]]] = {
    "fixed (x = R)": fixed,
    "pencil bid (4 predicates)": pencil_bid,
}


def measure(make: Callable[[random.Random, int], list[str]], n: int, chunk: int) -> float:
    rng = random.Random(20061129)
    elapsed = 0.0
    done = 0
    while done < n:
        texts = make(rng, min(chunk, n - done))
        start = time.perf_counter()
        for text in texts:
            parse(text)
        elapsed += time.perf_counter() - start
        done += len(texts)
    return n / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="constraints per shape")
    ap.add_argument("--chunk", type=int, default=100_000, help="texts generated at a time")
    args = ap.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, n = {args.n:,} per shape")
    for label, make in SHAPES.items():
        rate = measure(make, args.n, args.chunk)
        print(f"{label:28} {rate:>10,.0f} constraints/s")


if __name__ == "__main__":
    main()
