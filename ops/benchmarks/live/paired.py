"""Server CPU per request of two trees side by side (``python -m ops.benchmarks.live.paired
--before DIR``): on a shared machine one ``--request-costs`` run moves by 15-20% from the
next, so a change's ratio comes from the two servers measured in alternating blocks.

One uvicorn process per tree (``DIR``, a checkout of the code before, with this tree's
``.venv`` and ``ops/lib/ports.env``; and this tree), as ``--request-costs`` starts it, on the
bench book that ``ops/bench_live.py`` built (run it once first), with this tree's workers.
Each kind of request goes in ``--blocks`` blocks of ``--block`` requests, before and after
alternating (which side goes first alternates too); a block's CPU is its server process's
user and system time over it (``costs.cpu_ns``). Prints, per kind, the median (lowest-
highest) of the blocks' ms per request on each side, the ratio of the medians and the
median of the paired blocks' ratios, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from exchange.server import HTTP_PROTOCOL
from exchange.settings.proxies import NAME as PROXIES_VARIABLE
from exchange.settings.proxies import trusted_proxies, uvicorn_args
from ops.benchmarks.live import costs, provision
from ops.benchmarks.live.load import BUYERS
from ops.stack import ROOT, Stack, free_port

KINDS = {"bid": 0, "best": 1, "offer": 2, "markets": 3, "healthz": 4, "404": 5}


def _server(tree: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    argv = [str(ROOT / ".venv" / "bin" / "uvicorn"), "exchange.asgi:application"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    # As Stack.start_server: the proxies the environment trusts (none: --no-proxy-headers),
    # and the tree's own HTTP protocol where it has one.
    argv += uvicorn_args(trusted_proxies(provision.env().get(PROXIES_VARIABLE)))
    if (tree / "exchange" / "http_protocol.py").exists():
        argv += ["--http", HTTP_PROTOCOL]
    with log.open("w") as handle:
        return subprocess.Popen(
            argv,
            cwd=tree,
            env=provision.env(),
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _ready(url: str) -> None:
    for _ in range(240):
        try:
            if httpx.get(f"{url}/healthz", timeout=5).status_code < 400:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{url} did not answer")


def measure(args: argparse.Namespace) -> dict[str, Any]:
    tokens = provision.tokens([f"buyer{i}" for i in range(BUYERS)])
    log_dir = ROOT / ".data" / "bench-paired"
    log_dir.mkdir(parents=True, exist_ok=True)
    stack = Stack(env=provision.env(), log_dir=log_dir, log_level="WARNING")
    sides = {"before": Path(args.before).resolve(), "after": ROOT}
    servers: dict[str, subprocess.Popen[bytes]] = {}
    urls: dict[str, str] = {}
    load = [os.getloadavg()[0]]
    result: dict[str, Any] = {"kinds": {}, "blocks_with_a_thread_ended": 0}
    try:
        stack.start_workers()
        for side, tree in sides.items():
            port = free_port()
            servers[side] = _server(tree, port, log_dir / f"{side}.log")
            urls[side] = f"http://127.0.0.1:{port}"
        for url in urls.values():
            _ready(url)
        clients = {side: httpx.Client(base_url=url, timeout=60) for side, url in urls.items()}
        first = clients["after"].get("/api/v1/offers/?state=open&limit=1").json()
        first_id = first["results"][0]["id"]
        for kind in args.kinds.split(","):
            blocks: dict[str, list[float]] = {side: [] for side in sides}
            sent = 0
            size = args.block * (5 if kind == "404" else 1)  # a 404 costs a tenth of a bid
            for b in range(args.blocks + 1):  # block 0 warms both, untimed
                order = list(sides) if b % 2 else list(reversed(sides))
                for side in order:
                    name, send, expected = costs._requests(
                        tokens[(b + sent) % len(tokens)], first_id, 10_000
                    )[KINDS[kind]]
                    pid = servers[side].pid
                    threads, before = costs.thread_ids(pid), costs.cpu_ns(pid)
                    for i in range(size if b else 20):
                        answer = send(clients[side], sent + i)
                        if answer.status_code not in expected:
                            raise SystemExit(f"{side} {name}: {answer.status_code} {answer.text}")
                    spent = (costs.cpu_ns(pid) - before) / 1e9
                    if b and threads - costs.thread_ids(pid):
                        result["blocks_with_a_thread_ended"] += 1
                    if b:
                        blocks[side].append(1000 * spent / size)
                sent += size
            paired = [a / b for a, b in zip(blocks["before"], blocks["after"], strict=True) if b]
            result["kinds"][name] = {
                side: costs.spread(values) for side, values in blocks.items()
            } | {
                "ratio_of_medians": statistics.median(blocks["before"])
                / statistics.median(blocks["after"]),
                "median_paired_ratio": statistics.median(paired),
                "blocks": blocks,
            }
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            for kind in args.kinds.split(","):
                for side in sides:
                    name, send, _ = costs._requests(tokens[0], first_id, 10_000)[KINDS[kind]]
                    out = args.profile / f"{side}-{kind}.txt"
                    with costs._profiled(servers[side].pid, out, gil=not args.all_threads):
                        for i in range(args.profile_count):
                            send(clients[side], i)
    finally:
        for process in servers.values():
            process.terminate()
            process.wait(timeout=30)
        stack.stop()
    load.append(os.getloadavg()[0])
    result["load"] = load
    result["block"], result["blocks"] = args.block, args.blocks
    return result


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| request | before, ms | after, ms | before / after (medians) | paired blocks |",
        "|---|---|---|---|---|",
    ]
    for name, row in result["kinds"].items():
        b, a = row["before"], row["after"]
        lines.append(
            f"| {name} | {b['median']:.2f} ({b['low']:.2f}-{b['high']:.2f}) "
            f"| {a['median']:.2f} ({a['low']:.2f}-{a['high']:.2f}) "
            f"| {row['ratio_of_medians']:.2f}x | {row['median_paired_ratio']:.2f}x |"
        )
    lines.append(f"\nload average {result['load'][0]:.1f} before, {result['load'][1]:.1f} after")
    if result.get("blocks_with_a_thread_ended"):
        lines.append(f"blocks in which a thread ended: {result['blocks_with_a_thread_ended']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the tree measured as before")
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--block", type=int, default=60)
    parser.add_argument("--kinds", default="bid,best,404", help=",".join(KINDS))
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument(
        "--profile", type=Path, help="then py-spy (raw stacks) on each server into this folder"
    )
    parser.add_argument(
        "--all-threads",
        action="store_true",
        help="profile the threads the system has running rather than the one holding the "
        "GIL (py-spy without --gil; on some VMs it samples idle threads too)",
    )
    parser.add_argument("--profile-count", type=int, default=300)
    args = parser.parse_args()
    result = measure(args)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(markdown(result))


if __name__ == "__main__":
    main()
