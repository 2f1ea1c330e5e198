"""What a person looks at: the results table, the samples CSV and the utilisation plot."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpu_probe import vocab

if TYPE_CHECKING:
    from suites.runner.execute import ScenarioOutcome

COLUMNS = (  # (header, metric key, format)
    ("train s", vocab.TRAIN_TIME.key, "{:.1f}"),
    ("images/s", vocab.IMAGES_PER_SEC.key, "{:,.0f}"),
    ("test acc", vocab.TEST_ACCURACY.key, "{:.2%}"),
    ("fps", vocab.FPS.key, "{:,.1f}"),
    ("wall s", vocab.WALL_TIME.key, "{:.1f}"),
)


def fmt(value: Any, pattern: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return pattern.format(value)


def results_table(outcome: "ScenarioOutcome", title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for header in ("guest", "profile", "workload", "GPU", "vCPUs", "status"):
        table.add_column(header)
    for header, _, _ in COLUMNS:
        table.add_column(header, justify="right")
    table.add_column("CPU % mean", justify="right")
    for o in outcome.guests:
        m = o.result.metrics
        status = "ok" if o.result.ok else f"[red]{o.result.status}[/red]"
        cells = [fmt(m.get(key), pattern) for _, key, pattern in COLUMNS]
        cpu = fmt(o.sampled.get(f"{vocab.GUEST_CPU.key}.mean"), "{:.0f}")
        table.add_row(o.spec.guest_id, o.spec.profile, o.spec.workload, o.placement.gpu_label,
                      ",".join(map(str, o.placement.vcpus)), status, *cells, cpu)
    return table


def viewset_table(outcome: "ScenarioOutcome") -> Any:
    """Per-viewset fps, frame-time percentiles, composite and pixel check of graphics guests (None if none)."""
    from rich.table import Table

    rows = [(o, vs) for o in outcome.guests for vs in o.result.info.get("viewsets", [])
            if vocab.scoped_key(vs, vocab.COMPOSITE) in o.result.metrics]
    if not rows:
        return None
    table = Table(title="graphics viewsets (frame time = draw calls to glFinish)", title_justify="left")
    for header in ("guest", "viewset", "frames", "fps", "p50 ms", "p95 ms", "p99 ms", "composite", "pixels"):
        table.add_column(header, justify="left" if header in ("guest", "viewset", "pixels") else "right")
    for o, vs in rows:
        m = o.result.metrics
        pixels = o.result.info.get(f"{vs}.pixels") or {}
        check = ("[red]" + "; ".join(pixels["failed"])[:60] + "[/red]" if pixels.get("failed") else
                 ", ".join(pixels.get("statuses", [])) or "not checked")
        table.add_row(o.spec.guest_id, vs, fmt(m.get(vocab.scoped_key(vs, vocab.FRAMES)), "{:.0f}"),
                      fmt(m.get(vocab.scoped_key(vs, vocab.FPS)), "{:,.1f}"),
                      *(frame_time(m, vs, p) for p in ("p50", "p95", "p99")),
                      fmt(m.get(vocab.scoped_key(vs, vocab.COMPOSITE)), "{:,.1f}"), check)
    renderers = sorted({o.result.info.get("renderer", "?") for o, _ in rows})
    table.caption = f"renderer: {'; '.join(renderers)}" + ("; * eglretrace CPU time per frame" if any(
        vocab.scoped_key(vs, vocab.CPU_FRAME_TIME, "p50") in o.result.metrics for o, vs in rows) else "")
    return table


def frame_time(metrics: dict[str, float], scope: str, stat: str) -> str:
    """Wall frame time where the workload measured it, else the retracer's per-frame CPU time (starred)."""
    wall = metrics.get(vocab.scoped_key(scope, vocab.FRAME_TIME, stat))
    if wall is not None:
        return fmt(wall, "{:.1f}")
    return fmt(metrics.get(vocab.scoped_key(scope, vocab.CPU_FRAME_TIME, stat)), "{:.1f}*")


def summary_lines(outcome: "ScenarioOutcome") -> list[str]:
    inv, s = outcome.inventory, outcome.sampler
    gpus = ", ".join(g.get("name") or "?" for g in inv.gpus) or inv.gpu_status
    lines = [
        f"status: {outcome.status}   makespan: {fmt(outcome.makespan_s, '{:.1f}')} s   "
        f"data: {outcome.data.get('source', '?')} ({outcome.data.get('root', '?')})",
        f"host: {inv.cpu_model}, {inv.cpus_usable} cores; GPU: {gpus}",
        f"sampler: {s.achieved_rate_hz:.1f} Hz achieved of {s.rate_hz:g} Hz requested, {len(s.rows)} samples, "
        f"cost {s.cpu_pct:.2f}% of one core",
    ]
    for gpu, reasons in s.clock_events_seen().items():
        if reasons:
            lines.append(f"{gpu} clock event reasons seen: {', '.join(reasons)}")
    used = {c for o in outcome.guests for c in o.placement.vcpus}
    if len(used) >= inv.cpus_usable:
        lines.append(f"note: guests hold all {inv.cpus_usable} host cores, so the runner and its sampler compete with "
                     "them (on 2 cores cifar10-tf lost ~20 %); leave a core free for clean numbers")
    notes = {o.placement.note for o in outcome.guests if o.placement.note}
    lines += [f"note: {n}" for n in sorted(notes)]
    if outcome.data.get("source") == "synthetic":
        lines.append("note: trained on SYNTHETIC data; pass data.root=<dir holding MNIST/raw> for real MNIST")
    lines += [f"failure: {r}" for r in outcome.reasons]
    return lines


def write_samples_csv(rows: list[dict[str, Any]], path: Path) -> None:
    import pandas as pd

    pd.DataFrame(rows).to_csv(path, index=False, float_format="%.4g")


def plot_utilisation(outcome: "ScenarioOutcome", path: Path) -> None:
    """Host and per-guest CPU, guest memory and (when present) GPU lines over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    df = pd.DataFrame(outcome.sampler.rows)
    gpu_cols = [c for c in df.columns if c.startswith("gpu") and c.endswith(vocab.GPU_UTIL.key)]
    panels = 3 if gpu_cols else 2
    fig, axes = plt.subplots(panels, 1, figsize=(9, 2.6 * panels), sharex=True, constrained_layout=True)
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
    t0 = outcome.sampler.t0
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
        ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time since sampler start (s); shaded: each guest's training interval")
    fig.suptitle(f"{outcome.guests[0].spec.profile if outcome.guests else ''}: utilisation ({outcome.status})")
    fig.savefig(path, dpi=110)
    plt.close(fig)
