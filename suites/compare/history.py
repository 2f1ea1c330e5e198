"""One figure over the runs of one machine, as asv and conbench show theirs: each run's median and 95 % interval in
time order, and a vertical mark where the set-up changed, saying what changed (history.png, and a table)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from gpu_probe.stats import Interval, confidence_interval
from suites.compare.report import value
from suites.compare.results import RunFigures
from suites.compare.setups import differences
from suites.render.markdown import table
from suites.render.plots import pyplot, save, titled

__all__ = ["HISTORY_HEADERS", "Point", "history", "history_rows", "write_history"]

HISTORY_HEADERS = ("run", "started", "median", "[95% CI]", "n", "set-up change", "marks")


@dataclass
class Point:
    """One run's reading of the figure."""

    run: RunFigures
    interval: Interval
    changed: list[str] = field(default_factory=list)  # what differs from the run before ('' for the first)
    marks: list[str] = field(default_factory=list)


def history(runs: list[RunFigures], figure: str) -> list[Point]:
    """The runs holding ``figure``, oldest first, each with what its set-up changed from the one before."""
    held = sorted((r for r in runs if figure in r.figures), key=lambda r: r.run.start_time_ms)
    out: list[Point] = []
    for i, r in enumerate(held):
        fig = r.figures[figure]
        changed = [str(d) for d in differences(held[i - 1].setup, r.setup)] if i else []
        out.append(Point(r, confidence_interval(fig.values), changed, list(fig.marks)))
    return out


def said(changed: list[str], most: int = 2) -> str:
    """The first ``most`` set-up changes, and how many more (the report and ``make compare A B`` list them all)."""
    more = f"; (+{len(changed) - most} more)" if len(changed) > most else ""
    return "; ".join(changed[:most]) + more


def history_rows(points: list[Point]) -> list[list[str]]:
    def bounds(iv: Interval) -> str:
        return f"[{value(iv.low)}, {value(iv.high)}]" if iv.spread else "no spread"

    return [[p.run.label, p.run.started, value(p.interval.median), bounds(p.interval), str(p.interval.n),
             said(p.changed) or ("-" if i else "(first)"), "; ".join(p.marks) or "-"]
            for i, p in enumerate(points)]


def write_history(points: list[Point], figure: str, folder: Path) -> list[Path]:
    """history.png and history.md in ``folder``: the medians with their intervals over the runs, a dashed line
    before each run whose set-up changed, labelled with the first thing that changed."""
    folder.mkdir(parents=True, exist_ok=True)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5), layout="constrained")
    xs = list(range(len(points)))
    for x, p in zip(xs, points, strict=True):
        iv = p.interval
        if iv.spread:
            ax.plot([x, x], [iv.low, iv.high], color="tab:blue", lw=2)
        ax.plot([x], [iv.median], "o", color="0.6" if p.marks else "tab:blue")
        if p.changed:
            ax.axvline(x - 0.5, color="tab:orange", ls="--", lw=1)
            ax.annotate(p.changed[0][:40], (x - 0.5, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                        va="top", ha="right", fontsize=7, color="tab:orange")
    ax.set_xticks(xs, [p.run.started[5:] for p in points], rotation=30, fontsize=7)
    unit = points[0].run.figures[figure].unit if points else ""
    ax.set_ylabel(f"{unit}: median, 95 % interval")
    ax.set_xlim(-0.8, len(points) - 0.2)
    finite = [v for p in points for v in (p.interval.low, p.interval.high, p.interval.median) if math.isfinite(v)]
    if finite:
        ax.set_ylim(min(finite) * 0.95, max(finite) * 1.05)
    titled(fig, f"{figure} over {len(points)} run(s) of this machine (orange: the set-up changed; grey: marked)")
    png = save(fig, folder / "history.png", f"history of {figure}", "")
    md = folder / "history.md"
    md.write_text("\n".join([f"# History of {figure}", "", *table(HISTORY_HEADERS, history_rows(points)), "",
                             f"![{png.name}]({png.name})", ""]))
    return [md, png]
