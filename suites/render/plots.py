"""Figures of one run: utilisation over time, and a comparison's normalised phases."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from gpu_probe import vocab
from gpu_probe.shapes import JsonObject
from suites.record.sweep_points import SweepRow
from suites.run.comparison import TIME_PER_IMAGE, PhaseRow
from suites.run.outcome import ScenarioOutcome
from suites.validity import is_not_enforced

if TYPE_CHECKING:  # for the annotations only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the file-only Agg backend (no display here, ever); imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def warm() -> None:
    """pyplot imported and one figure with text drawn and dropped: the font cache, text layout and Agg renderer
    are set up, so processes forked after it (suites/pipeline/scenario_run.py's workers) do not each pay that."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(2, 1), constrained_layout=True)
    ax.plot([0, 1], [0, 1], label="x")
    ax.legend()
    ax.set_title("warm")
    fig.canvas.draw()
    plt.close(fig)


def titled(fig: Figure, *lines: str, fontsize: float = 10) -> None:
    """The figure's title, each line wrapped to the figure's width: a long stop reason, profile list or status used
    to run off both edges, and constrained layout does not wrap text."""
    chars = max(24, int(fig.get_figwidth() * 72 / (fontsize * 0.62)))  # ~0.6 em per character at this size
    fig.suptitle("\n".join(textwrap.fill(line, chars) for line in lines if line), fontsize=fontsize)


def close(fig: Figure) -> None:
    pyplot().close(fig)


def save(fig: Figure, path: Path, title: str, validity: str) -> Path:
    """Write the PNG with what it shows and what it is worth in its metadata (Title, Description), then free it."""
    fig.savefig(path, dpi=110, metadata={"Title": title, "Description": f"validity: {validity}"})
    close(fig)
    return path


def text_outside(fig: Figure) -> list[str]:
    """Every drawn text of a figure whose box reaches past the figure's edge (cut off in the PNG)."""
    from matplotlib.text import Text

    fig.canvas.draw()  # lays the figure out again at its own dpi (savefig drew it at another)
    renderer, box, out = fig.canvas.get_renderer(), fig.bbox, []
    undrawn = {id(label) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)  # ticks beyond the view: kept, not drawn
               for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]
               if not min(axis.get_view_interval()) - 1e-9 <= tick.get_loc() <= max(axis.get_view_interval()) + 1e-9
               for label in (tick.label1, tick.label2)}
    for text in fig.findobj(Text):
        if id(text) in undrawn or not text.get_visible() or not text.get_text().strip():
            continue
        bb = text.get_window_extent(renderer)
        if bb.x0 < box.x0 - 1 or bb.y0 < box.y0 - 1 or bb.x1 > box.x1 + 1 or bb.y1 > box.y1 + 1:
            out.append(text.get_text())
    return out


LINE_STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def series_style(i: int, series: int, points: int) -> JsonObject:
    """Series i's colour, dash and markers: guests with the same figures (two identical workloads) draw on top of
    each other, and only dash patterns and markers set at different samples tell the lines apart there."""
    step = min(max(1, points), max(points // 8, series, 1))
    return {"color": f"C{i % 10}", "ls": LINE_STYLES[i % len(LINE_STYLES)], "marker": MARKERS[i % len(MARKERS)],
            "markevery": (i % step, step), "ms": 3.5, "lw": 1}


def training_strip(ax: Axes, outcome: ScenarioOutcome) -> None:
    """Each guest's timed training interval as a bar of its colour, one row per guest (shading the panels per
    guest stacked into one dark block when the intervals coincide)."""
    guests = outcome.guests
    for i, o in enumerate(guests):
        if o.result.t_train_start and o.result.t_train_end:
            start = o.result.t_train_start - outcome.samples.t0
            ax.barh(i, o.result.t_train_end - o.result.t_train_start, 0.6, left=start, color=f"C{i % 10}", alpha=0.7)
    ax.set_yticks(range(len(guests)), [o.spec.guest_id for o in guests], fontsize=7)
    ax.set_ylim(max(1, len(guests)) - 0.5, -0.5)
    ax.set_ylabel("timed\ntraining", fontsize=8)


def overlapping_ticks(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of neighbouring tick labels on one axis whose boxes overlap (unreadable), after :func:`text_outside`
    has drawn the figure."""
    renderer, out = fig.canvas.get_renderer(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text().strip()]
            boxes = [t.get_window_extent(renderer) for t in labels]
            out += [(a.get_text(), b.get_text()) for (a, ba), (b, bb) in zip(zip(labels, boxes, strict=True),
                                                                             zip(labels[1:], boxes[1:], strict=True),
                                                                             strict=False) if ba.overlaps(bb)]
    return out


def wrapped(label: str, width: int = 16) -> str:
    """A category label broken into lines (at spaces and hyphens) that fit under its bar."""
    return "\n".join(textwrap.fill(part, width) for part in label.split("\n"))


def utilisation(outcome: ScenarioOutcome, path: Path) -> Path:
    """Each guest's timed training, host and per-guest CPU, guest memory and (when present) GPU lines over time."""
    import pandas as pd

    plt = pyplot()
    df = pd.DataFrame(outcome.samples.rows)
    guests = {o.spec.guest_id for o in outcome.guests}
    # this host's GPUs (gpu0.util_pct), then those sampled on a remote guest's own node (g1.gpu0.util_pct)
    gpu_cols = [c for c in df.columns if vocab.is_gpu_key(c, vocab.GPU_UTIL)] + [
        c for c in df.columns if c.split(".", 1)[0] in guests and vocab.is_gpu_key(c.split(".", 1)[-1], vocab.GPU_UTIL)]
    panels = 3 if gpu_cols else 2
    strip = 0.25 + 0.12 * len(outcome.guests)
    fig, axes = plt.subplots(panels + 1, 1, figsize=(10, 2.6 * panels + strip * 2.6), sharex=True,
                             constrained_layout=True, gridspec_kw={"height_ratios": [strip] + [1] * panels})
    if df.empty:
        df = pd.DataFrame({"t_s": [0.0]})
    t = df["t_s"]
    training_strip(axes[0], outcome)
    axes = axes[1:]
    cpu_ax, mem_ax = axes[0], axes[1]
    if vocab.HOST_CPU.key in df:
        host = df[vocab.HOST_CPU.key] * outcome.inventory.cpus_usable  # to the guests' 100-per-core scale
        cpu_ax.plot(t, host, label="host (all cores)", color="black", lw=1)
    for i, o in enumerate(outcome.guests):
        for ax, metric in ((cpu_ax, vocab.GUEST_CPU), (mem_ax, vocab.GUEST_RSS)):
            col = vocab.guest_key(o.spec.guest_id, metric)
            if col in df:
                ax.plot(t, df[col], label=f"{o.spec.guest_id} {o.spec.workload}",
                        **series_style(i, len(outcome.guests), len(df)))
    cpu_ax.set_ylabel("CPU % (100 = 1 core)")
    mem_ax.set_ylabel(f"guest RSS ({vocab.GUEST_RSS.unit})")
    if gpu_cols:
        for col in gpu_cols:
            axes[2].plot(t, df[col], label=gpu_label(col),
                         **series_style(gpu_cols.index(col), len(gpu_cols), len(df)))
        axes[2].set_ylabel("GPU util (%)")
    else:
        cpu_ax.set_title(f"{outcome.inventory.gpu_status}", loc="right", fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside, not on, the data
    axes[-1].set_xlabel("time since sampler start (s)")
    title = f"{outcome.guests[0].spec.profile if outcome.guests else ''}: utilisation"
    titled(fig, f"{title} ({outcome.status}; profile {outcome.validity_label})"
           + ("; NOT a GPU measurement" if is_not_enforced(outcome.validity) else "")
           + (f"; HOST BUSY ({outcome.host_busy})" if outcome.host_busy else ""), fontsize=11)
    return save(fig, path, title, outcome.validity)


def gpu_label(col: str) -> str:
    """``GPU 0`` for this host's, ``g1: its node's GPU 0`` for one sampled on a remote guest's node."""
    parts = col.split(".")
    if parts[0].startswith("gpu"):
        return f"GPU {parts[0].removeprefix('gpu')}"
    return f"{parts[0]}: its node's GPU {parts[1].removeprefix('gpu')}"


def error_bars(values: list[float], lows: list[float], highs: list[float]) -> list[list[float]]:
    """matplotlib's yerr from CI bounds; NaN (no bar drawn) where there is no interval: a zero-length bar's caps
    looked like an interval and struck through the value written above it."""
    return [[v - lo if lo == lo else math.nan for v, lo in zip(values, lows, strict=True)],
            [hi - v if hi == hi else math.nan for v, hi in zip(values, highs, strict=True)]]


def comparison(rows: list[PhaseRow], path: Path, title: str) -> Path:
    """Normalised throughput and time per phase (with their 95 % CI), and CPU use, as bars; the validity of the
    phases in the subtitle."""
    plt = pyplot()
    labels = [wrapped(f"{r.label}\n{r.validity}") for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(max(10.0, 2.6 * len(rows)), 4.2), constrained_layout=True)
    xs = range(len(rows))
    tx = [r.throughput_x for r in rows]
    ax1.bar([x - 0.2 for x in xs], tx, 0.4, label="images/s", capsize=3,
            yerr=error_bars(tx, [r.throughput_x_ci_low for r in rows], [r.throughput_x_ci_high for r in rows]))
    ti = [r.time_x for r in rows]
    per_image = any(r.time_basis == TIME_PER_IMAGE for r in rows)  # sized by time: the window is no work's time
    ax1.bar([x + 0.2 for x in xs], ti, 0.4, label="time per image" if per_image else "train time", capsize=3,
            yerr=error_bars(ti, [r.time_x_ci_low for r in rows], [r.time_x_ci_high for r in rows]))
    ax1.axhline(1.0, color="black", lw=0.8)
    spread = any(v == v for r in rows for v in (r.throughput_x_ci_low, r.time_x_ci_low) if r.n > 1)
    ax1.set_ylabel("x baseline (95 % CI)" if spread else "x baseline (one repeat: no CI drawn)")
    ax2.bar(xs, [r.guest_cpu_pct for r in rows], 0.5, color="C2")
    ax2.set_ylabel("guest CPU % (100 = one core)")
    for ax in (ax1, ax2):
        ax.set_xticks(list(xs), labels, fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    ax1.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False)  # above the data
    validity = ", ".join(sorted({f"{r.validity}" for r in rows}))
    titled(fig, title, f"profile {validity}; n = {max((r.n for r in rows), default=0)} repeat(s) per phase"
           + ("; NOT a GPU measurement" if is_not_enforced(validity) else "")
           + "".join(sorted({f"; {r.validity_reason}" for r in rows if r.validity_reason}))
           + (f"; HOST BUSY ({next(r.host_busy for r in rows if r.host_busy)}): no verdict"
              if any(r.host_busy for r in rows) else ""))
    return save(fig, path, title, validity)


def sweep(rows: list[SweepRow], path: Path, title: str) -> Path:
    """All guests' images/s per job (median with its 95 % CI), one bar per job, its validity on the bar's label."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.45 * len(rows)), constrained_layout=True)
    ys = list(range(len(rows)))[::-1]  # first job on top, as in the table
    values = [r.images_per_sec.median if r.images_per_sec.n else 0.0 for r in rows]
    xerr = error_bars(values, [r.images_per_sec.low for r in rows], [r.images_per_sec.high for r in rows])
    colors = ["C3" if is_not_enforced(r.validity) else "C0" for r in rows]
    bars = ax.barh(ys, values, 0.6, xerr=xerr, capsize=3, color=colors)
    ax.bar_label(bars, labels=[f"{v:,.0f} (n={r.images_per_sec.n}, {r.status})" for v, r in zip(values, rows,
                                                                                               strict=True)],
                 fontsize=7, padding=4)
    ax.set_yticks(ys, [f"{r.job}: {r.profile} / {r.workload}\n{r.validity}" for r in rows], fontsize=8)
    ax.set_xlabel("images/s, all guests together (median, 95 % CI over repeats)")
    ax.set_xlim(0, max(values, default=1.0) * 1.35 or 1.0)  # room for the bar labels
    ax.grid(axis="x", alpha=0.3)
    validity = ", ".join(sorted({r.validity for r in rows}))
    titled(fig, title, f"profile {validity}" + ("; red: not enforced, NOT a GPU measurement"
                                                if is_not_enforced(validity) else ""))
    return save(fig, path, title, validity)
