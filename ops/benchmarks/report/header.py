"""The head of the report (what ran where, beside the paper's machine) and its Method."""

from __future__ import annotations

from ops.benchmarks import paper

from .doc import Doc


def repeats_text(doc: Doc) -> str:
    b = doc.results["settings"]["budget"]
    warm = b.get("warm", 1)
    return (
        f"at least {b['least']} timed runs (more while they fit in {b['seconds']:g} s, "
        f"up to {b['most']}; {b['least_slow']} when one run takes over {b['slow']:g} s), "
        f"after up to {warm} untimed warm-up runs (at least one; more while they take "
        f"under {b.get('warm_seconds', 0):g} s)"
    )


def spark_budget_text(doc: Doc) -> str:
    b = doc.results["settings"].get("spark_budget")
    if not b:
        return "not run"
    more = (
        f", more while they fit in {b['seconds']:g} s, up to {b['most']}; "
        f"{b['least_slow']} when one run takes over {b['slow']:g} s"
        if b["most"] > b["least"]
        else ""
    )
    return f"one untimed warm-up run, then at least {b['least']} timed run(s){more}"


def header(doc: Doc) -> None:
    r, m = doc.results, doc.results["machine"]
    doc.prose(
        "header",
        mode="full run" if r["mode"] == "full" else "quick smoke run (tiny sizes)",
        date=m["date"],
        commit=m["commit"],
        minutes=f"{r['duration'] / 60:.1f}",
        cpu=m["cpu"],
        cores=m["cores"],
        memory=f"{m['memory_gib']:g}",
        paper_machine=paper.PAPER_MACHINE,
        postgresql=m["postgresql"],
        python=m["python"],
        spark_master=m["spark_master"],
        load_start=f"{m['load_average_start']:.1f}",
        load_end=f"{m.get('load_average_end', float('nan')):.1f}",
        repeats=repeats_text(doc),
    )
    if m["load_average_start"] > m["cores"]:
        doc.prose("shared_machine", load=f"{m['load_average_start']:.1f}", cores=m["cores"])


def method(doc: Doc) -> None:
    s = doc.results["settings"]
    doc.prose(
        "method",
        database=s["database"],
        seed=s["seed"],
        sizes=", ".join(f"{n:,}" for n in s["sizes"]),
        batch_subs=", ".join(f"{n:,}" for n in s["batch_subs"]),
        batches=", ".join(str(b) for b in s["batches"]),
        spark_budget=spark_budget_text(doc),
    )
