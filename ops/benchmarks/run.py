"""ops/bench: seed 000's Figures 4 to 7 on this machine, both strategies side by side,
and the Spark batch matcher on the same workloads and batches.

    ops/bench                 the full run (100,000 and 1,000,000 subscriptions), writes
                              docs/benchmarks.md and docs/img/bench-*.png
    ops/bench --quick --out DIR    a smoke run at tiny sizes, report and plots into DIR
    ops/bench --from-json FILE [--out DIR] [--no-plots]    re-render a report from a previous run
    ops/bench index [--quick] [--out DIR]    the matching-index benchmark alone
                              (ops/benchmarks/index.py), its section put into DIR's report
    ops/bench history [--quick] [--out DIR]    the historic-read benchmark alone
                              (ops/benchmarks/history.py)
    ops/bench subscriptions [--quick] [--out DIR]    10,000 live subscriptions on one
                              market: the matching cycle and the subscription engine
                              beside it (ops/benchmarks/subscriptions.py), a subsection
                              of the alerts section between its markers
    ops/bench patterns [--quick] [--out DIR]    the patterns benchmark alone
                              (ops/benchmarks/patterns.py), its section put into DIR's report
    ops/bench dissemination [--quick] [--watches N] [--out DIR]    the dissemination
                              benchmark alone (ops/benchmarks/dissemination.py)
    ops/bench scaleout [--quick]    the matching stage with one and with two matching
                              workers on four markets (ops/benchmarks/scaleout.py); prints
                              its table
    ops/bench alerts [--quick] [--sizes N,...] [--seconds S] [--out DIR]    live
                              subscriptions (1,000 to 100,000) on two engine processes at
                              50 trades/s on the stack (ops/benchmarks/alerts.py, SPEC 9
                              "Alerts"): its table and plot put into the report between
                              their markers (the notes around them stay); the bid path
                              with and without subscriptions is ops/benchmarks/alerts.py
                              --bid-path
    ops/bench fairness [--quick] [--out DIR]    a victim's alert beside an offender's 100
                              heavy subscriptions, on the stack (ops/benchmarks/fairness.py)
    ops/bench live [--live-json F] [--load-json F] [--out DIR]    the end-to-end
                              benchmark alone (ops/bench_live.py, SPEC 9's book built
                              afresh): its target rows, sections and explanation put into
                              DIR's report (ops/benchmarks/report/live_alone.py)

Each ``ops/bench NAME`` is also spelled ``ops/bench --NAME-only`` (``--index-only``,
``--live-only``, ...), the form the reports in docs/ and their generators quote; the
subcommand's own options follow it (``ops/bench patterns --quick``).

The database is ``--dsn``, else ``BENCH_DATABASE_URL``, else ``DATABASE_URL``, else the
development cluster of ``ops/services``. The stores live in the schemas
``<prefix>_paper`` and ``<prefix>_range`` (``--namespace-prefix``, default ``bench``),
which are replaced at each load and dropped after each experiment. Workloads are
generated with Spark (``SPARK_MASTER``, default ``local[2]``) into a temporary directory.

Figures 4 and 5 use workloads of one publication (the paper's parameters computed for
one publication); Figures 6 and 7 use one workload per kind generated for the largest
batch, whose first B publications form the batch of size B. The Spark matcher (unless
``--no-spark``) matches every batch of the workloads of at most ``--spark-max-subs``
subscriptions in the run's one SparkSession (a quick run: Figure 6's largest batches), of
the workload kinds of ``--spark-kinds`` (default: all that run). The
run exits 1 if any two strategies, any two repeats or the oracle disagree on any timed
match, or if the Spark matcher's pairs differ from ``range``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from exchange.settings.ports import DEV_DATABASE_URL
from matching.spark import spark_session
from matching.spark.session import default_master
from matching.workload import KINDS, Workload, generate, terms
from ops.benchmarks import machine, timing
from ops.benchmarks.alerts import measure as measure_alerts
from ops.benchmarks.dissemination import measure as measure_dissemination
from ops.benchmarks.experiments import Context, run_experiment
from ops.benchmarks.fairness import measure as measure_fairness
from ops.benchmarks.fairness import splice as splice_fairness
from ops.benchmarks.history import measure as measure_history
from ops.benchmarks.index import measure as measure_index
from ops.benchmarks.patterns import measure as measure_patterns
from ops.benchmarks.report import write_report
from ops.benchmarks.report.alerts import PLOT as ALERTS_PLOT
from ops.benchmarks.report.alerts import plot as plot_alerts
from ops.benchmarks.report.alerts import splice as splice_alerts
from ops.benchmarks.report.dissemination import PLOT as DISSEMINATION_PLOT
from ops.benchmarks.report.dissemination import plot as plot_dissemination
from ops.benchmarks.report.dissemination import splice as splice_dissemination
from ops.benchmarks.report.history import splice as splice_history
from ops.benchmarks.report.index import plot as plot_index
from ops.benchmarks.report.index import splice as splice_index
from ops.benchmarks.report.live_alone import splice as splice_live
from ops.benchmarks.report.patterns import PLOT as PATTERNS_PLOT
from ops.benchmarks.report.patterns import plot as plot_patterns
from ops.benchmarks.report.patterns import splice as splice_patterns
from ops.benchmarks.report.subscriptions import splice as splice_subscriptions
from ops.benchmarks.scaleout import main as scaleout_main
from ops.benchmarks.spark_matcher import DEFAULT_MAX_SUBS, spark_budget, spark_plan
from ops.benchmarks.subscriptions import measure as measure_subscriptions


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x.replace("_", "")) for x in text.split(",") if x)


# The benchmarks run alone, each a subcommand: name, help.
ALONE = {
    "index": "the matching-index benchmark (ops/benchmarks/index.py), its section put into "
    "the report already in --out (default docs/)",
    "history": "the historic-read benchmark (ops/benchmarks/history.py), its section put "
    "into the report",
    "subscriptions": "the live-subscriptions benchmark (ops/benchmarks/subscriptions.py), "
    "its subsection put into the report's alerts section",
    "patterns": "the patterns benchmark (ops/benchmarks/patterns.py), its section put into "
    "the report already in --out (default docs/)",
    "dissemination": "the dissemination benchmark (ops/benchmarks/dissemination.py), its "
    "section put into the report",
    "scaleout": "the matching stage with one and two matching workers on four markets "
    "(ops/benchmarks/scaleout.py): prints its table, docs/benchmarks.md quotes it",
    "alerts": "live subscriptions (1,000 to 100,000, 70% form 1, 20% form 3, 10% form 4) on "
    "two engine processes at 50 trades/s on the stack (ops/benchmarks/alerts.py, SPEC 9 "
    "'Alerts'): its table, plot and section put into the report",
    "fairness": "another user's alert beside an offender's 100 heavy subscriptions on the "
    "stack (ops/benchmarks/fairness.py, issue 37), its section put into the report",
    "live": "the end-to-end benchmark (ops/bench_live.py with its defaults, or take "
    "--live-json; --load-json adds the sustained-load run): its rows of the targets table, "
    "its sections and its explanation put into the report already in --out (default docs/)",
}


def _spelled_as_subcommand(argv: list[str]) -> list[str]:
    """``--NAME-only`` (the older spelling, which the reports quote) as the subcommand
    ``NAME`` in front of the other arguments."""
    legacy = {f"--{name}-only": name for name in ALONE}
    named = [a for a in argv if a in legacy]
    if len(named) > 1:
        raise SystemExit(f"ops/bench: {' and '.join(named)} name two benchmarks; run one")
    if not named:
        return argv
    return [legacy[named[0]], *(a for a in argv if a != named[0])]


def _alone_parsers(ap: argparse.ArgumentParser) -> None:
    """One subcommand for each benchmark run alone. Their options default to SUPPRESS, so
    the same option given before the subcommand (to the main parser) is not reset."""
    commands = ap.add_subparsers(dest="command", metavar="{" + ",".join(ALONE) + "}")
    for name, help_text in ALONE.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--out", type=Path, default=argparse.SUPPRESS, help="the report's folder")
        if name == "live":
            sub.add_argument("--live-json", type=Path, default=argparse.SUPPRESS)
            sub.add_argument("--load-json", type=Path, default=argparse.SUPPRESS)
            continue
        sub.add_argument("--quick", action="store_true", default=argparse.SUPPRESS)
        sub.add_argument(
            "--from-json",
            type=Path,
            default=argparse.SUPPRESS,
            help="the section of an earlier result, not a new run",
        )
        if name == "dissemination":
            sub.add_argument("--watches", type=int, help="range watches")
        if name == "alerts":
            sub.add_argument("--sizes", type=_ints, help="live subscriptions, one run each")
            sub.add_argument("--seconds", type=float, default=60, help="seconds of trades")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="ops/bench", description=__doc__.split("\n")[0] if __doc__ else None
    )
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    ap.add_argument("--out", type=Path, help="where the report and plots go (default docs/)")
    ap.add_argument("--dsn", help="PostgreSQL conninfo (default: BENCH_DATABASE_URL, ...)")
    ap.add_argument("--namespace-prefix", default="bench")
    ap.add_argument("--sizes", type=_ints, help="subscriptions for Figures 4 and 5")
    ap.add_argument("--batch-subs", type=_ints, help="subscriptions for Figures 6 and 7")
    ap.add_argument("--batches", type=_ints, help="batch sizes for Figures 6 and 7")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--seed", type=int, default=20061129)
    ap.add_argument("--work", type=Path, help="where workloads are generated (default: a temp dir)")
    ap.add_argument("--keep-data", action="store_true", help="keep the generated workloads")
    ap.add_argument(
        "--deadline",
        type=float,
        help="minutes after which experiments not yet started are skipped (default: none)",
    )
    ap.add_argument("--from-json", type=Path, help="only render the report of a previous run")
    ap.add_argument(
        "--no-plots",
        dest="plots",
        action="store_false",
        help="write the report's text only, not its PNGs (drawing them takes seconds)",
    )
    ap.add_argument(
        "--no-spark",
        dest="spark",
        action="store_false",
        help="leave out the Spark batch matcher (by default it runs on every batch of the "
        "workloads up to --spark-max-subs subscriptions)",
    )
    ap.add_argument(
        "--spark-max-subs",
        type=lambda text: int(text.replace("_", "")),
        default=DEFAULT_MAX_SUBS,
        help="the Spark matcher runs on workloads of at most this many subscriptions "
        f"(default {DEFAULT_MAX_SUBS:,})",
    )
    ap.add_argument(
        "--spark-kinds",
        help="the workload kinds the Spark matcher runs on (default: those of --kinds); the "
        "test suite's quick run names one, since tests/spark checks the matcher against the "
        "oracle on generated constraints of every shape",
    )
    ap.add_argument(
        "--no-live",
        dest="live",
        action="store_false",
        help="leave out the end-to-end benchmark (ops/bench_live.py; never part of --quick)",
    )
    ap.add_argument(
        "--live-json",
        type=Path,
        help="take the end-to-end result from this file (ops/bench_live.py --json) "
        "instead of running it",
    )
    ap.add_argument(
        "--load-json",
        type=Path,
        help="a second ops/bench_live.py result, run at the rate the stack holds, reported as "
        "the sustained load test",
    )
    ap.add_argument(
        "--no-index",
        dest="index",
        action="store_false",
        help="leave out the matching-index benchmark (by default part of every run)",
    )
    ap.add_argument(
        "--no-patterns",
        dest="patterns",
        action="store_false",
        help="leave out the patterns benchmark (by default part of every run)",
    )
    ap.add_argument(
        "--limit",
        type=int,
        default=15_000_000,
        help="largest intermediate answer (predicate pairs) a batch may need (default 15M)",
    )
    _alone_parsers(ap)
    args = ap.parse_args(_spelled_as_subcommand(sys.argv[1:] if argv is None else argv))
    if args.quick:
        args.sizes = args.sizes or (200,)
        args.batch_subs = args.batch_subs or (200,)
        args.batches = args.batches or (1, 4, 16)
        args.budget = timing.Budget(least=2, most=4, seconds=0.2, warm=3)
    else:
        args.sizes = args.sizes or (100_000, 1_000_000)
        args.batch_subs = args.batch_subs or (100_000,)
        args.batches = args.batches or (1, 3, 10, 30, 100, 300, 1000)
        args.budget = timing.Budget()
    args.kinds = tuple(k for k in args.kinds.split(",") if k)
    args.spark_kinds = (
        args.kinds
        if args.spark_kinds is None
        else tuple(k for k in args.spark_kinds.split(",") if k)
    )
    for kind in (*args.kinds, *args.spark_kinds):
        if kind not in KINDS:
            ap.error(f"unknown kind {kind}")
    return args


def database_url(args: argparse.Namespace) -> str:
    return (
        args.dsn
        or os.environ.get("BENCH_DATABASE_URL")
        or os.environ.get("DATABASE_URL")
        or DEV_DATABASE_URL
    )


def plan(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The experiments in the order they run: the cheap and decisive ones first."""
    steps: list[dict[str, Any]] = []
    small, large = min(args.sizes), max(args.sizes)
    figure5_order = ["fixed", "geometric", "proportional", "large_intermediate"]
    kinds5 = [k for k in figure5_order if k in args.kinds]
    for subs in sorted(args.sizes):
        if subs == large and large != small:
            continue
        for kind in kinds5:
            steps.append({"figure": 5, "kind": kind, "subs": subs, "pubs": 1})
    for subs in args.batch_subs:
        for kind in kinds5:
            batches = [b for b in args.batches if intermediate_rows(kind, subs, b) <= args.limit]
            left_out = [b for b in args.batches if b not in batches]
            steps.append(
                {
                    "figure": 6,
                    "kind": kind,
                    "subs": subs,
                    "pubs": max(batches),
                    "batches": batches,
                    "left_out": left_out,
                }
            )
    if large != small:
        for kind in kinds5:
            steps.append({"figure": 5, "kind": kind, "subs": large, "pubs": 1})
    return steps


def intermediate_rows(kind: str, subs: int, batch: int) -> int:
    """About how many predicate pairs meet when a batch is matched (the intermediate answer).

    Only the large-intermediate workload has many: each of its n terms meets half of
    the other side, so a batch of B meets B * n * subs / 2 (n computed for B).
    """
    if kind != "large_intermediate":
        return 0
    return batch * terms(subs, batch) * subs // 2


def measure(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    log_lines: list[str] = []

    def log(line: str) -> None:
        stamp = time.perf_counter() - started
        text = f"[{stamp:7.1f} s] {line}"
        log_lines.append(text)
        print(text, flush=True)

    url = database_url(args)
    work = args.work or Path(tempfile.mkdtemp(prefix="intersect-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"mode": "quick" if args.quick else "full", "experiments": []}
    with psycopg.connect(url, autocommit=True) as conn:
        server = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]  # SHOW returns one row
        results["machine"] = machine.describe(server, default_master())
        results["settings"] = {
            "sizes": list(args.sizes),
            "batch_subs": list(args.batch_subs),
            "batches": list(args.batches),
            "kinds": list(args.kinds),
            "seed": args.seed,
            "limit": args.limit,
            "budget": vars(args.budget),
            "spark_budget": vars(spark_budget(args.quick)) if args.spark else None,
            "spark_max_subs": args.spark_max_subs,
            "spark_kinds": list(args.spark_kinds),
            "database": conn.info.host + ":" + str(conn.info.port) + "/" + conn.info.dbname,
        }
        log(f"database {results['settings']['database']}, workloads in {work}")
        spark_started = time.perf_counter()
        spark = spark_session()
        # The first jobs of a JVM run slowly (class loading, JIT): warm up on a tiny
        # workload so that the first timed generation is not charged for it.
        generate(spark, Workload("fixed", 10, 1, args.seed), work / "warm-up")
        shutil.rmtree(work / "warm-up", ignore_errors=True)
        results["spark_start"] = time.perf_counter() - spark_started
        log(f"Spark ({default_master()}) started and warmed up in {results['spark_start']:.1f} s")
        ctx = Context(
            spark=spark,
            conn=conn,
            work=work,
            namespace_prefix=args.namespace_prefix,
            strategies=("paper", "range"),
            budget=args.budget,
            seed=args.seed,
            log=log,
            spark_budget=spark_budget(args.quick) if args.spark else None,
        )
        try:
            for step in plan(args):
                minutes = (time.perf_counter() - started) / 60
                if args.deadline is not None and minutes > args.deadline:
                    log(f"skipped (past the {args.deadline:g} min deadline): {step}")
                    results["experiments"].append({**step, "skipped": True})
                    continue
                w = Workload(step["kind"], step["subs"], step["pubs"], args.seed)
                fixed = step["kind"] == "fixed"
                spark_batches = (
                    tuple(spark_plan(step, args.quick, args.spark_max_subs))
                    if step["kind"] in args.spark_kinds
                    else ()
                )
                if step["figure"] == 5:
                    exp = run_experiment(
                        ctx,
                        w,
                        [1],
                        paper_phase_times=fixed,
                        explain_batches=(1,),
                        spark_batches=spark_batches,
                    )
                else:
                    explain = (max(step["batches"]),) if fixed else ()
                    exp = run_experiment(
                        ctx,
                        w,
                        step["batches"],
                        explain_batches=explain,
                        spark_batches=spark_batches,
                    )
                    if step["left_out"]:
                        log(
                            f"  batches {step['left_out']} left out: an intermediate answer of "
                            f"more than {args.limit:,} rows"
                        )
                results["experiments"].append({**step, **exp.as_dict()})
                if not args.keep_data:
                    shutil.rmtree(work / f"{w.kind}-{w.subs}-{w.pubs}", ignore_errors=True)
        finally:
            if not args.keep_data and args.work is None:
                shutil.rmtree(work, ignore_errors=True)
    results["duration"] = time.perf_counter() - started
    results["machine"]["load_average_end"] = machine.load_average()
    results["identical"] = all(
        e.get("identical", True) for e in results["experiments"] if not e.get("skipped")
    )
    results["log"] = log_lines
    return results


def measure_live() -> dict[str, Any]:
    """SPEC 9's end-to-end benchmark with its defaults (its own database; see the script)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "live.json"
        done = subprocess.run(
            [sys.executable, str(ROOT / "ops" / "bench_live.py"), "--json", str(path)], cwd=ROOT
        )
        if not path.exists():
            raise SystemExit(f"ops/bench_live.py failed (exit {done.returncode})")
        return json.loads(path.read_text())


def _alone(args: argparse.Namespace, key: str, measure: Any) -> tuple[Path, Path, dict[str, Any]]:
    """A benchmark run alone: where its report goes, where its raw results were written,
    and its results (``{key: ...}``), measured now or taken from ``--from-json``."""
    out = args.out or ROOT / "docs"
    out.mkdir(parents=True, exist_ok=True)
    raw = ROOT / "test-artifacts" / "bench" / f"{key}.json"
    if args.from_json:
        return out, raw, json.loads(args.from_json.read_text())
    results = {key: measure(quick=args.quick)}
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(results, indent=1) + "\n")
    return out, raw, results


def index_only(args: argparse.Namespace) -> int:
    """The matching-index benchmark alone (or, with ``--from-json``, the ``index`` entry of
    an earlier result), its section spliced into the existing report."""
    out, raw, results = _alone(args, "index", measure_index)
    plot_index(results, out / "img" / "bench-index.png")
    report = splice_index(out / "benchmarks.md", results["index"])
    print(f"raw results: {raw}\nreport: {report}")
    return 0


def history_only(args: argparse.Namespace) -> int:
    """The historic-read benchmark alone (ops/benchmarks/history.py), its section spliced
    into the existing report."""
    out, raw, results = _alone(args, "history", measure_history)
    report = splice_history(out / "benchmarks.md", results["history"])
    print(f"raw results: {raw}\nreport: {report}")
    return 0


def subscriptions_only(args: argparse.Namespace) -> int:
    """The live-subscriptions benchmark alone (ops/benchmarks/subscriptions.py), its
    section spliced into the existing report."""
    out, raw, results = _alone(args, "subscriptions", measure_subscriptions)
    report = splice_subscriptions(out / "benchmarks.md", results["subscriptions"])
    print(f"raw results: {raw}\nreport: {report}")
    return 0


def patterns_only(args: argparse.Namespace) -> int:
    """The patterns benchmark alone (``ops/benchmarks/patterns.py``), its plot written and
    its section spliced into the existing report."""
    out, raw, results = _alone(args, "patterns", measure_patterns)
    plot_patterns(results, out / PATTERNS_PLOT)
    report = splice_patterns(out / "benchmarks.md", results["patterns"])
    print(f"raw results: {raw}\nreport: {report}")
    return 0


def dissemination_only(args: argparse.Namespace) -> int:
    """The dissemination benchmark alone, its section spliced into the existing report."""

    def measure(*, quick: bool) -> Any:
        return measure_dissemination(quick=quick, watches=args.watches)

    out, raw, results = _alone(args, "dissemination", measure)
    plot_dissemination(results, out / DISSEMINATION_PLOT)
    report = splice_dissemination(out / "benchmarks.md", results["dissemination"])
    print(f"raw results: {raw}\nreport: {report}")
    return 0


def alerts_only(args: argparse.Namespace) -> int:
    """The alerts benchmark alone (each size a fresh database and stack: a few minutes at
    100,000), its plot written and its section spliced into the existing report."""

    def measure(*, quick: bool) -> Any:
        sizes = getattr(args, "sizes", None)
        return measure_alerts(quick=quick, sizes=sizes, seconds=args.seconds)

    out, raw, results = _alone(args, "alerts", measure)
    plot_alerts(results, out / ALERTS_PLOT)
    report = splice_alerts(out / "benchmarks.md", results["alerts"])
    print(f"raw results: {raw}\nreport: {report}")
    return 0


def fairness_only(args: argparse.Namespace) -> int:
    """The fairness benchmark alone (two runs of about 45 s each; ``--quick``: 5 s of
    trades each), its section spliced into the existing report."""

    def measure(*, quick: bool) -> Any:
        return measure_fairness(seconds=5 if quick else 20)

    out, raw, results = _alone(args, "fairness", measure)
    report = splice_fairness(out / "benchmarks.md", results["fairness"])
    print(f"raw results: {raw}\nreport: {report}")
    return 0


def live_only(args: argparse.Namespace) -> int:
    """The end-to-end benchmark alone, its parts spliced into the existing report."""
    out = args.out or ROOT / "docs"
    if not (out / "benchmarks.md").exists():
        raise SystemExit(f"no report at {out / 'benchmarks.md'} to put the run into: run ops/bench")
    live = json.loads(args.live_json.read_text()) if args.live_json else measure_live()
    results: dict[str, Any] = {"live": live}
    if args.load_json:
        results["load"] = json.loads(args.load_json.read_text())
    raw = ROOT / "test-artifacts" / "bench" / "live.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(results, indent=1) + "\n")
    print(f"raw results: {raw}\nreport: {splice_live(out / 'benchmarks.md', results)}")
    return 0


def scaleout_only(args: argparse.Namespace) -> int:
    """The matching stage with one and two workers (ops/benchmarks/scaleout.py)."""
    return scaleout_main(["--quick"] if getattr(args, "quick", False) else [])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command is not None:
        alone: dict[str, Callable[[argparse.Namespace], int]] = {
            "index": index_only,
            "history": history_only,
            "subscriptions": subscriptions_only,
            "patterns": patterns_only,
            "dissemination": dissemination_only,
            "fairness": fairness_only,
            "alerts": alerts_only,
            "live": live_only,
            "scaleout": scaleout_only,
        }
        return alone[args.command](args)
    results = json.loads(args.from_json.read_text()) if args.from_json else measure(args)
    if args.index and not args.from_json:
        results["index"] = measure_index(quick=args.quick)
    if args.patterns and not args.from_json:
        results["patterns"] = measure_patterns(quick=args.quick)
    if args.live_json:
        results["live"] = json.loads(args.live_json.read_text())
    elif args.live and not args.quick and not args.from_json:
        results["live"] = measure_live()
    if args.load_json:
        results["load"] = json.loads(args.load_json.read_text())
    out = args.out or ROOT / "docs"
    out.mkdir(parents=True, exist_ok=True)
    if not args.from_json:
        raw = (
            out / "results.json" if args.out else ROOT / "test-artifacts" / "bench" / "results.json"
        )
        raw.parent.mkdir(parents=True, exist_ok=True)
        raw.write_text(json.dumps(results, indent=1) + "\n")
        print(f"raw results: {raw}")
    report = write_report(results, out, plots=args.plots)
    print(f"report: {report}")
    ok = results["identical"]
    print(f"identical pairs: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
