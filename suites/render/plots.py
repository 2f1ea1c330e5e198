"""Figures of one run: utilisation over time, and a comparison's normalised phases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpu_probe import vocab
from suites.run.compare import PhaseRow
from suites.run.outcome import ScenarioOutcome


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (no display here, ever); imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def utilisation(outcome: ScenarioOutcome, path: Path) -> Path:
    """Host and per-guest CPU, guest memory and (when present) GPU lines over time."""
    import pandas as pd

    plt = pyplot()
    df = pd.DataFrame(outcome.samples.rows)
    gpu_cols = [c for c in df.columns if vocab.is_gpu_key(c, vocab.GPU_UTIL)]
    panels = 3 if gpu_cols else 2
    fig, axes = plt.subplots(panels, 1, figsize=(10, 2.6 * panels), sharex=True, constrained_layout=True)
    if df.empty:
        df = pd.DataFrame({"t_s": [0.0]})
    t = df["t_s"]
    cpu_ax, mem_ax = axes[0], axes[1]
    if vocab.HOST_CPU.key in df:
        host = df[vocab.HOST_CPU.key] * outcome.inventory.cpus_usable  # to the guests' 100-per-core scale
        cpu_ax.plot(t, host, label="host (all cores)", color="black", lw=1)
    for o in outcome.guests:
        gid = o.spec.guest_id
        for ax, metric in ((cpu_ax, vocab.GUEST_CPU), (mem_ax, vocab.GUEST_RSS)):
            col = vocab.guest_key(gid, metric)
            if col in df:
                ax.plot(t, df[col], label=f"{gid} {o.spec.workload}", lw=1)
    t0 = outcome.samples.t0
    for i, o in enumerate(outcome.guests):  # shade each guest's timed training interval
        if o.result.t_train_start and o.result.t_train_end:
            for ax in axes:
                ax.axvspan(o.result.t_train_start - t0, o.result.t_train_end - t0, color=f"C{i}", alpha=0.08)
    cpu_ax.set_ylabel("CPU % (100 = 1 core)")
    mem_ax.set_ylabel(f"guest RSS ({vocab.GUEST_RSS.unit})")
    if gpu_cols:
        for col in gpu_cols:
            axes[2].plot(t, df[col], label=col, lw=1)
        axes[2].set_ylabel("GPU util %")
    else:
        cpu_ax.set_title(f"{outcome.inventory.gpu_status}", loc="right", fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside, not on, the data
    axes[-1].set_xlabel("time since sampler start (s); shaded: each guest's training interval")
    fig.suptitle(f"{outcome.guests[0].spec.profile if outcome.guests else ''}: utilisation ({outcome.status}; "
                 f"profile {outcome.validity})")
    fig.savefig(path, dpi=110, metadata={"Description": f"validity: {outcome.validity}"})
    plt.close(fig)
    return path


def error_bars(values: list[float], lows: list[float], highs: list[float]) -> list[list[float]]:
    """matplotlib's yerr from CI bounds (0 where there is no interval)."""
    return [[v - lo if lo == lo else 0.0 for v, lo in zip(values, lows, strict=True)],
            [hi - v if hi == hi else 0.0 for v, hi in zip(values, highs, strict=True)]]


def comparison(rows: list[PhaseRow], path: Path, title: str) -> Path:
    """Normalised throughput and time per phase (with their 95 % CI), and CPU use, as bars; the validity of the
    phases in the subtitle."""
    plt = pyplot()
    labels = [f"{r.label}\n{r.validity}" for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
    xs = range(len(rows))
    tx = [r.throughput_x for r in rows]
    ax1.bar([x - 0.2 for x in xs], tx, 0.4, label="images/s", capsize=3,
            yerr=error_bars(tx, [r.throughput_x_ci_low for r in rows], [r.throughput_x_ci_high for r in rows]))
    ti = [r.time_x for r in rows]
    ax1.bar([x + 0.2 for x in xs], ti, 0.4, label="train time", capsize=3,
            yerr=error_bars(ti, [r.time_x_ci_low for r in rows], [r.time_x_ci_high for r in rows]))
    ax1.axhline(1.0, color="black", lw=0.8)
    ax1.set_ylabel("x baseline (95 % CI)")
    ax2.bar(xs, [r.guest_cpu_pct for r in rows], 0.5, color="C2")
    ax2.set_ylabel("guest CPU % (100 = one core)")
    for ax in (ax1, ax2):
        ax.set_xticks(list(xs), labels, rotation=15)
        ax.grid(axis="y", alpha=0.3)
    ax1.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False)  # above the data
    validity = ", ".join(sorted({f"{r.validity}" for r in rows}))
    fig.suptitle(f"{title}\nprofile {validity}; n = {max((r.n for r in rows), default=0)} repeat(s) per phase"
                 + ("; NOT a GPU measurement" if "not enforced" in validity else ""), fontsize=10)
    fig.savefig(path, dpi=110, metadata={"Title": title, "Description": f"validity: {validity}"})
    plt.close(fig)
    return path
