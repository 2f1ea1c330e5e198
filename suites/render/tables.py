"""What a person reads on the console: a scenario's results, its graphics viewsets, a comparison's phases."""

from __future__ import annotations

import math
from typing import Any

from rich.table import Table

from gpu_probe import vocab
from suites.run.compare import PhaseRow
from suites.run.outcome import ScenarioOutcome

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


def results_table(outcome: ScenarioOutcome, title: str) -> Table:
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


def viewset_table(outcome: ScenarioOutcome) -> Table | None:
    """Per-viewset fps, frame-time percentiles, composite and pixel check of graphics guests (None if none)."""
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


def summary_lines(outcome: ScenarioOutcome) -> list[str]:
    inv, s = outcome.inventory, outcome.samples
    gpus = ", ".join(g.get("name") or "?" for g in inv.gpus) or inv.gpu_status
    lines = [
        f"status: {outcome.status}   makespan: {fmt(outcome.makespan_s, '{:.1f}')} s   "
        f"data: {outcome.data.get('source', '?')} ({outcome.data.get('root', '?')})",
        f"host: {inv.cpu_model}, {inv.cpus_usable} cores; GPU: {gpus}",
        f"sampler: {s.achieved_hz:.1f} Hz achieved of {s.rate_hz:g} Hz requested, {len(s.rows)} samples, "
        f"cost {s.cpu_pct:.2f}% of one core",
    ]
    for gpu, reasons in s.clock_events.items():
        if reasons:
            lines.append(f"{gpu} clock event reasons seen: {', '.join(reasons)}")
    used = {c for o in outcome.guests for c in o.placement.vcpus}
    if len(used) >= inv.cpus_usable:
        lines.append(f"note: guests hold all {inv.cpus_usable} host cores, so the runner and its sampler compete with "
                     "them (on 2 cores a guest lost up to ~20 % of its throughput); leave a core free for clean "
                     "numbers")
    notes = {o.placement.note for o in outcome.guests if o.placement.note}
    lines += [f"note: {n}" for n in sorted(notes)]
    if outcome.data.get("source") == "synthetic":
        lines.append("note: trained on SYNTHETIC data; pass data.root=<dir holding MNIST/raw> for real MNIST")
    lines += [f"failure: {r}" for r in outcome.reasons]
    return lines


def comparison_table(rows: list[PhaseRow], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("phase", "profile", "guests", "status", "images/s", "x baseline", "train s", "x baseline",
                "guest CPU %", "host CPU %", "GPU util %"):
        t.add_column(col, justify="left" if col in ("phase", "profile", "status") else "right")
    for r in rows:
        t.add_row(r.label, r.profile, str(r.guests), r.status, fmt(r.images_per_sec, "{:,.0f}"),
                  fmt(r.throughput_x, "{:.2f}"), fmt(r.train_time_s, "{:.1f}"), fmt(r.time_x, "{:.2f}"),
                  fmt(r.guest_cpu_pct, "{:.0f}"), fmt(r.host_cpu_pct, "{:.0f}"), fmt(r.gpu_util_pct, "{:.0f}"))
    return t
