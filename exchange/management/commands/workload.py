"""``manage.py workload generate|load``: the load-test workloads of seed 000 (SPEC 7).

    manage.py workload generate --kind fixed --subs 100000 --pubs 1 --seed 7 --out DIR
    manage.py workload load DIR --strategy range [--namespace NS] [--replace]

``generate`` runs on Spark (``SPARK_MASTER``, default ``local[2]``) and writes Parquet and
the ``match_files`` text format into DIR (see ``matching.workload``). ``load`` bulk-loads
DIR with ``COPY`` into the constraint store ``NS`` (a PostgreSQL schema of Django's
default database, default ``workload_<strategy>``), keeps it, and prints the seconds of
each phase.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import CommandError

from exchange.management.commands.match_files import database_conninfo
from exchange.management.offline import OfflineCommand
from matching.spark import spark_session
from matching.store import StoreError
from matching.workload import KINDS, Workload, WorkloadError, generate, load_workload


class Command(OfflineCommand):
    help = "Generate the paper's workloads with Spark, or bulk-load one into a constraint store."

    def add_arguments(self, parser: Any) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        gen = actions.add_parser("generate", help="write a workload (Parquet and text)")
        gen.add_argument("--kind", choices=KINDS, required=True)
        gen.add_argument("--subs", type=int, required=True, help="number of subscriptions")
        gen.add_argument("--pubs", type=int, required=True, help="number of publications")
        gen.add_argument("--seed", type=int, default=0)
        gen.add_argument("--out", required=True, help="the directory to write")
        load = actions.add_parser("load", help="bulk-load a workload directory with COPY")
        load.add_argument("directory")
        load.add_argument("--strategy", choices=("paper", "range"), default="range")
        load.add_argument("--namespace", help="the store's schema (default workload_<strategy>)")
        load.add_argument(
            "--replace", action="store_true", help="drop an existing store of that name first"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "generate":
                self._generate(options)
            else:
                self._load(options)
        except (WorkloadError, StoreError, ValueError) as exc:
            raise CommandError(str(exc)) from None

    def _generate(self, options: dict[str, Any]) -> None:
        w = Workload(options["kind"], options["subs"], options["pubs"], options["seed"])
        started = time.perf_counter()
        spark = spark_session()
        spark_start = time.perf_counter() - started
        result = generate(spark, w, options["out"])
        params = ", ".join(f"{k}={v}" for k, v in w.parameters().items())
        self.stdout.write(
            f"{w.kind}: {w.subs:,} subscriptions, {w.pubs:,} publications, seed {w.seed} "
            f"({params}; about {w.expected_matches():g} matching pairs expected)\n"
            f"wrote {result.directory}: pubs.txt, subs.txt, pubs.parquet/, subs.parquet/\n"
            f"seconds: spark start {spark_start:.2f}, publications {result.seconds['pubs']:.2f},"
            f" subscriptions {result.seconds['subs']:.2f}"
        )

    def _load(self, options: dict[str, Any]) -> None:
        strategy = options["strategy"]
        namespace = options["namespace"] or f"workload_{strategy}"
        loaded = load_workload(
            database_conninfo(),
            options["directory"],
            strategy=strategy,
            namespace=namespace,
            replace=options["replace"],
        )
        s = loaded.seconds
        self.stdout.write(
            f"loaded {loaded.counts['pubs']:,} publications and {loaded.counts['subs']:,} "
            f"subscriptions ({loaded.workload.kind}) into {namespace} ({strategy})\n"
            f"seconds: decode {s['decode_pubs'] + s['decode_subs']:.2f}, "
            f"copy {s['copy_pubs'] + s['copy_subs']:.2f}, indexes {s['indexes']:.2f}, "
            f"statistics {s['statistics']:.2f}, total {s['total']:.2f}"
        )
