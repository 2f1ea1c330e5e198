"""The mixed and consolidation scenarios' figures: slowdown bars, sequential vs concurrent, CPU utilisation,
consolidation curve."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from suites.record.reader import MixedReport
from suites.render.plots import error_bars, pyplot, save, titled
from suites.validity import is_not_enforced


def _bars(ax: Any, profiles: list[str], series: list[tuple[str, list[float]]],
          intervals: list[list[tuple[float, float]]] | None = None) -> None:
    """Grouped bars per profile, with each bar's 95 % interval as an error bar where there is one."""
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series):
        xs = [k + (i - (len(series) - 1) / 2) * width for k in range(len(profiles))]
        heights = [0 if math.isnan(v) else v for v in values]
        yerr = None
        if intervals is not None:
            yerr = error_bars(heights, [lo for lo, _ in intervals[i]], [hi for _, hi in intervals[i]])
        bars = ax.bar(xs, heights, width, label=label, yerr=yerr, capsize=3)
        ax.bar_label(bars, labels=["-" if math.isnan(v) else f"{v:.1f}" for v in values], fontsize=7)
    if intervals is not None:
        cut_wide_intervals(ax, [v for _, vs in series for v in vs], [iv for ivs in intervals for iv in ivs])
    ax.set_xticks(range(len(profiles)), profiles)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=len(series), frameon=False)


WIDEST = 3.0  # an axis spans at most this many times the largest bar; a wider interval is cut, and said


def cut_wide_intervals(ax: Any, values: list[float], intervals: list[tuple[float, float]]) -> None:
    """An interval many times the bars' size (a slowdown's upper bound at 17,500 % beside bars of 40 %) would
    flatten every bar: the axis is held to WIDEST times the largest bar, and the cut said on the plot (its bounds are
    in the report's table)."""
    tallest = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
    bound = max(tallest * WIDEST, 10.0)
    lows = [lo for lo, _ in intervals if math.isfinite(lo)]
    highs = [hi for _, hi in intervals if math.isfinite(hi)]
    if not any(h > bound for h in highs) and not any(lo < -bound for lo in lows):
        return
    ax.set_ylim(max(min([*lows, 0.0]) * 1.05, -bound), min(max([*highs, 0.0]) * 1.05, bound))
    ax.text(0.99, 0.97, "an interval wider than the axis is cut (its bounds: the report's table)",
            transform=ax.transAxes, ha="right", va="top", fontsize=7, color="0.3")


class Saver:
    """Saves each figure with the report's caveat (the phases' validity) in its subtitle and PNG Description."""

    def __init__(self, rep: MixedReport, folder: Path) -> None:
        self.plt, self.folder, self.files = pyplot(), folder, []
        self.validity = ", ".join(sorted(set(rep.validity.values()))) or "?"
        busy = next((m.text for found in rep.marks.values() for m in found if m.text.startswith("host busy")), "")
        self.caveat = f"profile {self.validity}" + ("; NOT a GPU measurement" if is_not_enforced(self.validity)
                                                    else "") + (f"; HOST BUSY: {busy}" if busy else "")

    def __call__(self, fig: Any, name: str, title: str) -> None:
        titled(fig, title, self.caveat)
        self.files.append(save(fig, self.folder / name, title, self.validity))


def draw(rep: MixedReport, folder: Path) -> list[Path]:
    """Write the figures the report has numbers for; returns their paths."""
    save = Saver(rep, folder)
    if rep.mixed:
        draw_mixed(rep, save)
    if rep.consolidation:
        draw_consolidation(rep, save)
    return save.files


def draw_mixed(rep: MixedReport, save: Saver) -> None:
    plt, profiles = save.plt, list(rep.mixed)
    get = lambda key: [rep.mixed[p].get(key, math.nan) for p in profiles]  # noqa: E731
    fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
    ci = lambda key: [(rep.mixed[p].get(f"{key}.ci_low", math.nan),  # noqa: E731
                       rep.mixed[p].get(f"{key}.ci_high", math.nan)) for p in profiles]
    _bars(ax, profiles, [("CAD run time", get("cad_run_time_increase_pct")),
                         ("ML training time", get("ml_train_time_increase_pct"))],
          [ci("cad_run_time_increase_pct"), ci("ml_train_time_increase_pct")])
    ax.axhline(0, color="black", lw=0.8)
    ax.set_ylabel("% increase, mixed vs alone")
    save(fig, "slowdown.png", "Slowdown of each workload when CAD and ML share the profile")
    fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
    _bars(ax, profiles, [("sequential (CAD then ML)", get("sequential_s")), ("concurrent", get("concurrent_s"))])
    ax.set_ylabel("completion time (s)")
    save(fig, "sequential_vs_concurrent.png", "Sequential vs concurrent completion")
    fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
    _bars(ax, profiles, [("CAD alone", get("cad.host_cpu_pct")), ("mixed", get("mixed.host_cpu_pct")),
                         ("ML alone", get("ml.host_cpu_pct"))])
    ax.set_ylabel("host CPU % (100 = all cores)")
    save(fig, "cpu_utilisation.png", "CPU utilisation per phase")


def draw_consolidation(rep: MixedReport, save: Saver) -> None:
    """CAD p95 frame time and ML slowdown over the number of CAD guests, each in its own panel with its QoS limit
    (on twin axes the two curves, scaled independently, can lie exactly on top of each other)."""
    c = rep.consolidation
    ns = sorted(int(k[1:].split(".")[0]) for k in c if k.endswith(".meets_qos"))
    slow = [c.get(f"n{n}.ml_slowdown_pct", math.nan) for n in ns]
    panels = [("worst CAD p95 frame time", "p95 frame time (ms)", [c[f"n{n}.p95_frame_ms_worst"] for n in ns],
               c.get("qos_p95_frame_ms", math.nan), "o-", "C0")]
    if any(not math.isnan(v) for v in slow):
        panels.append(("ML training slowdown", "ML slowdown (%)", slow, c.get("qos_ml_slowdown_pct", math.nan),
                       "s--", "C1"))
    fig, axes = save.plt.subplots(len(panels), 1, figsize=(7, 2.4 + 1.9 * len(panels)), sharex=True,
                                  constrained_layout=True, squeeze=False)
    for ax, (label, ylabel, values, limit, style, color) in zip(axes[:, 0], panels, strict=True):
        ax.plot(ns, values, style, ms=6, color=color, label=label)
        if not math.isnan(limit):
            ax.axhline(limit, color=color, ls=":", label=f"QoS limit ({limit:g})")
        for n in ns:
            ax.axvspan(n - 0.4, n + 0.4, color="C2" if c[f"n{n}.meets_qos"] else "C3", alpha=0.12)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    ax = axes[-1, 0]
    ax.set_xlim(min(ns, default=1) - 0.6, max(ns, default=1) + 0.6)  # one count is still a readable plot
    ax.set_xticks(ns)
    ax.set_xlabel("CAD guests on the GPU (green band: meets QoS, red: misses)")
    save(fig, "consolidation.png", f"Consolidation on {rep.consolidation_profile}: "
         f"{c['guests_at_qos']:.0f} guest(s) at QoS; stopped: {rep.stop_reason or '?'}")
