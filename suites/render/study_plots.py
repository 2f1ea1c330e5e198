"""The study's figures: slowdown bars, sequential vs concurrent, CPU utilisation, consolidation curve."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from suites.record.reader import StudyReport
from suites.render.plots import pyplot


def _bars(ax: Any, profiles: list[str], series: list[tuple[str, list[float]]]) -> None:
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series):
        xs = [k + (i - (len(series) - 1) / 2) * width for k in range(len(profiles))]
        bars = ax.bar(xs, [0 if math.isnan(v) else v for v in values], width, label=label)
        ax.bar_label(bars, labels=["-" if math.isnan(v) else f"{v:.1f}" for v in values], fontsize=7)
    ax.set_xticks(range(len(profiles)), profiles)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def draw(rep: StudyReport, out_dir: Path) -> list[Path]:
    """Write the figures the report has numbers for; returns their paths."""
    plt = pyplot()
    files: list[Path] = []

    def save(fig: Any, name: str) -> None:
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        files.append(out_dir / name)

    profiles = list(rep.mixed)
    if profiles:
        get = lambda key: [rep.mixed[p].get(key, math.nan) for p in profiles]  # noqa: E731
        fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
        _bars(ax, profiles, [("CAD run time", get("cad_run_time_increase_pct")),
                             ("ML training time", get("ml_train_time_increase_pct"))])
        ax.axhline(0, color="black", lw=0.8)
        ax.set_ylabel("% increase, mixed vs alone")
        ax.set_title("Slowdown of each workload when CAD and ML share the profile")
        save(fig, "slowdown.png")
        fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
        _bars(ax, profiles, [("sequential (CAD then ML)", get("sequential_s")), ("concurrent", get("concurrent_s"))])
        ax.set_ylabel("completion time (s)")
        ax.set_title("Sequential vs concurrent completion")
        save(fig, "sequential_vs_concurrent.png")
        fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
        _bars(ax, profiles, [("CAD alone", get("cad.host_cpu_pct")), ("mixed", get("mixed.host_cpu_pct")),
                             ("ML alone", get("ml.host_cpu_pct"))])
        ax.set_ylabel("host CPU % (100 = all cores)")
        ax.set_title("CPU utilisation per phase")
        save(fig, "cpu_utilisation.png")
    if rep.consolidation:
        c = rep.consolidation
        ns = sorted(int(k[1:].split(".")[0]) for k in c if k.endswith(".meets_qos"))
        fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
        ax.plot(ns, [c[f"n{n}.p95_frame_ms_worst"] for n in ns], "o-", label="worst CAD p95 frame time (ms)")
        ax.axhline(c.get("qos_p95_frame_ms", math.nan), color="C0", ls=":", label="p95 QoS limit")
        slow = [c.get(f"n{n}.ml_slowdown_pct", math.nan) for n in ns]
        if any(not math.isnan(v) for v in slow):
            ax2 = ax.twinx()
            ax2.plot(ns, slow, "s--", color="C1", label="ML slowdown (%)")
            ax2.axhline(c.get("qos_ml_slowdown_pct", math.nan), color="C1", ls=":", label="ML QoS limit")
            ax2.set_ylabel("ML slowdown (%)")
            ax2.legend(fontsize=7, loc="lower right")
        for n in ns:
            ax.axvspan(n - 0.4, n + 0.4, color="C2" if c[f"n{n}.meets_qos"] else "C3", alpha=0.12)
        ax.set_xlabel("CAD guests on the GPU (green: meets QoS, red: misses)")
        ax.set_ylabel("p95 frame time (ms)")
        ax.set_xticks(ns)
        ax.set_title(f"Consolidation on {rep.consolidation_profile}: {c['guests_at_qos']:.0f} guest(s) at QoS")
        ax.legend(fontsize=7, loc="upper left")
        save(fig, "consolidation.png")
    return files
