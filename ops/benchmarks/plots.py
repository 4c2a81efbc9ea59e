"""PNG plots of Figures 4 to 7 (matplotlib, no display needed)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ops.benchmarks.tables import LABELS, STRATEGIES, figure4_rows, figure5_points, figure6_points

COLOURS = {"paper": "#c0504d", "range": "#4f81bd", "paper (2006)": "#9a9a9a"}
NAMES = {"paper": "paper strategy", "range": "range strategy", "paper (2006)": "seed 000 (2006)"}


def _pyplot() -> Any:
    # matplotlib only when a plot is drawn (two seconds to import), its backend chosen first
    import matplotlib

    matplotlib.use("Agg")
    # pyplot after the backend is chosen
    import matplotlib.pyplot as plt

    return plt


def plot_all(results: dict[str, Any], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in (
        ("bench-fig4.png", _figure4),
        ("bench-fig5.png", _figure5),
        ("bench-fig6.png", _figure6),
        ("bench-fig7.png", _figure7),
    ):
        path = directory / name
        if draw(results, path):
            written.append(path)
    return written


def _figure4(results: dict[str, Any], path: Path) -> bool:
    rows = figure4_rows(results)
    if not rows["sizes"]:
        return False
    plt = _pyplot()
    phases = ["generation", "decode", "copy", "indexes", "statistics", "matching"]
    sizes = rows["sizes"]
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4), squeeze=False)
    height = 0.8 / 3
    for ax, subs in zip(axes[0], sizes, strict=True):
        series = {"paper (2006)": rows["published"].get(subs, {}), **rows["bars"][subs]}
        for k, (name, values) in enumerate(series.items()):
            ys = [i + (k - 1) * height for i in range(len(phases))]
            xs = [values.get(phase) or 0.0 for phase in phases]
            ax.barh(ys, xs, height=height, label=NAMES[name], color=COLOURS.get(name))
        ax.set_yticks(range(len(phases)), phases)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("seconds (log)")
        ax.set_title(f"fixed, {subs:,} subscriptions, 1 publication")
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Figure 4: preprocessing and matching phases")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _per_kind(
    title: str,
    ylabel: str,
    points: dict[str, dict[str, list[tuple[float, float]]]],
    path: Path,
    xlabel: str,
    logx: bool,
) -> bool:
    if not points:
        return False
    plt = _pyplot()
    kinds = list(points)
    cols = 2 if len(kinds) > 1 else 1
    rows = (len(kinds) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.6 * rows), squeeze=False)
    for ax, kind in zip(axes.flat, kinds, strict=False):
        for strategy, xy in points[kind].items():
            xy = sorted(xy)
            ax.plot(
                [x for x, _ in xy],
                [y for _, y in xy],
                marker="o",
                label=NAMES.get(strategy, strategy),
                color=COLOURS.get(strategy),
            )
        ax.set_title(LABELS[kind])
        ax.set_yscale("log")
        if logx:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(kinds) :]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _figure5(results: dict[str, Any], path: Path) -> bool:
    title = "Figure 5: one publication against N subscriptions (median)"
    return _per_kind(title, "ms (log)", figure5_points(results), path, "subscriptions", logx=True)


def _batches(
    title: str, ylabel: str, *, throughput: bool
) -> Callable[[dict[str, Any], Path], bool]:
    """Figure 6 (match times) or 7 (throughput): the same batches, read two ways."""

    def draw(results: dict[str, Any], path: Path) -> bool:
        points = figure6_points(results, throughput=throughput)
        return _per_kind(title, ylabel, points, path, "publications in the batch", logx=True)

    return draw


_figure6 = _batches(
    "Figure 6: matching a batch of publications (median)", "ms (log)", throughput=False
)
_figure7 = _batches(
    "Figure 7: throughput of batched matching", "publications/s (log)", throughput=True
)


__all__ = ["STRATEGIES", "plot_all"]


def live_sweep_plot(sweep: dict[str, Any], path: Path) -> None:
    """Latency (p50, p90, p99 to the frame and p99 to the 201) against the offered rate of
    ``ops/bench_live.py --sweep``, with SPEC 9's p99 bar."""
    runs = [run for run in sweep["runs"] if run["frame_ms"]]
    if not runs:
        return
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    rates = [run["rate"] for run in runs]
    for q, style in (("p50", "o-"), ("p90", "s-"), ("p99", "^-")):
        ax.plot(rates, [run["frame_ms"][q] for run in runs], style, label=f"bid to frame, {q}")
    acks = [run for run in runs if run["ack_ms"]]
    ax.plot(
        [run["rate"] for run in acks],
        [run["ack_ms"]["p99"] for run in acks],
        "x--",
        label="bid to 201, p99",
    )
    ax.axhline(500, color="#c0504d", linestyle=":", label="SPEC 9: p99 500 ms")
    ax.set_yscale("log")
    ax.set_xlabel("offered bids/s")
    ax.set_ylabel("ms (log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
