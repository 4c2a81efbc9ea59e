"""The load-test workloads of seed 000, section 5, generated with Spark (SPEC 7).

No Django here. ``Workload(kind, subs, pubs, seed)`` names a workload and derives the
paper's parameters (``parameters.py``); ``generate(spark, workload, out)`` writes it as
Parquet and as the ``match_files`` text format (``generate.py``); ``iter_items(dir,
side)`` reads it back as ``(id, Constraint)`` pairs (``files.py``); ``load_workload``
bulk-loads a directory into a constraint store with each phase timed (``load.py``).

Only ``generate`` needs Spark, and it imports pyspark when called, so that reading and loading a
workload do not start a JVM.
"""

from .files import iter_items, read_manifest
from .generate import MANIFEST, SIDES, Generated, WorkloadError, generate
from .load import load_workload
from .parameters import (
    EPSILON_UNITS,
    GRID,
    KINDS,
    Workload,
    box_width,
    fixed_top,
    proportional_top,
    terms,
    width_units,
)

__all__ = [
    "EPSILON_UNITS",
    "GRID",
    "KINDS",
    "MANIFEST",
    "SIDES",
    "Generated",
    "Workload",
    "WorkloadError",
    "box_width",
    "fixed_top",
    "generate",
    "iter_items",
    "load_workload",
    "proportional_top",
    "read_manifest",
    "terms",
    "width_units",
]
