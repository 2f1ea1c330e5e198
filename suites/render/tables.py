"""What a person reads on the console: a scenario's results, its graphics viewsets, a comparison's phases."""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
from typing import Any

from rich.table import Table

from gpu_probe import vocab
from gpu_probe.shapes import JsonObject
from suites.data.dataset import LOOK_ALIKE
from suites.record.sweep_points import SweepRow
from suites.run.comparison import TIME_PER_IMAGE, PhaseRow
from suites.run.outcome import ScenarioOutcome, missed_target, percent
from suites.run.phase_numbers import jitter_pct
from suites.validity import EMULATED, EMULATED_MPS, ENFORCED, NOT_ENFORCED, TCG_EMULATION, labelled

TABLE_WIDTH = 120  # every console table fits this many columns: a log, a terminal, a pasted issue


def console_width() -> int:
    """On a terminal, its width (COLUMNS where set), at most TABLE_WIDTH; off one (a log, a pipe, CI, where a test
    runner's COLUMNS=80 describes no screen), TABLE_WIDTH."""
    if not sys.stdout.isatty():
        return TABLE_WIDTH
    cols = os.environ.get("COLUMNS", "")
    width = int(cols) if cols.isdigit() else shutil.get_terminal_size((TABLE_WIDTH, 24)).columns
    return max(40, min(width, TABLE_WIDTH))


def figures_line(outcome: ScenarioOutcome) -> str:
    """Every guest's measured figures on one line (the last resort when no file or store could take them)."""
    return "; ".join(f"{o.spec.guest_id} {o.spec.workload} {o.result.status}: "
                     + ", ".join(f"{k}={v:.6g}" for k, v in sorted(o.result.metrics.items())
                                 if isinstance(v, (int, float)))
                     for o in outcome.guests) or "no guest ran"


def unfold(text: str) -> str:
    """:func:`fold_line`'s lines joined again: each continuation (two more spaces) back onto its line (what a
    program reading the output sees as one line)."""
    return re.sub(r"\n(\s*)  (?=\S)", " ", text)


def fold_line(text: str, width: int = TABLE_WIDTH) -> str:
    """A plain line folded at spaces to ``width`` columns, its continuations indented two more. A word longer than
    a line (a path, a URI) stands alone on its own line, whole, and so does a `command` in backquotes: a command
    folded across lines would run half of it when pasted into a shell."""
    out: list[str] = []
    for line in text.splitlines() or [""]:
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[:len(line) - len(line.lstrip(" "))]
        words = re.findall(r"(?:`[^`]*`|\S)+", line)
        current = lead
        for word in words:
            if current.strip() and len(current) + 1 + len(word) > width:
                out.append(current)
                current = lead + "  "
            current += (" " if current.strip() else "") + word
            if len(current) > width:  # a word longer than a line: alone on its own
                out.append(current)
                current = lead + "  "
        if current.strip():
            out.append(current)
    return "\n".join(out)


def fold_shared(texts: list[str], min_len: int = 24) -> tuple[list[str], list[str]]:
    """Cells whose long text several rows share, shortened to the text's head (before its first ':') and a mark,
    with the full text once under the table: (cells, caption lines)."""
    shared = [t for t in dict.fromkeys(texts) if len(t) >= min_len and texts.count(t) > 1]
    marks = {t: "*" * (i + 1) for i, t in enumerate(shared)}
    cells = [f"{t.split(':', 1)[0]} {marks[t]}" if t in marks else t for t in texts]
    return cells, [f"{marks[t]} {t}" for t in shared]


COLUMNS = (  # (header, metric key, format); what each header measures: RESULTS_CAPTION
    ("train s", vocab.TRAIN_TIME.key, "{:.1f}"),
    ("images/s", vocab.IMAGES_PER_SEC.key, "{:,.0f}"),
    ("test acc", vocab.TEST_ACCURACY.key, "{:.2%}"),
    ("fps", vocab.FPS.key, "{:,.1f}"),
    ("wall s", vocab.WALL_TIME.key, "{:.1f}"),
)


def fmt(value: Any, pattern: str, blank: str = "-") -> str:
    """``value`` as ``pattern`` formats it, or ``blank`` where there is none (None, NaN): a table never says 'nan'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return blank
    return pattern.format(value)


RESULTS_CAPTION = ("train s: first to last training step (warm-up included); images/s: steady state over the timed "
                   "window (after the warm-up steps), ± its windows' rates' spread (median absolute deviation, % of "
                   "their median); test acc: at the end, beside its target (≥ met, < missed); "
                   "wall s: guest start to result (its set-up included: longer than the makespan, which starts at the "
                   "barrier); CPU %: the guest's processes, 100 = one core")


def shouted(busy: str) -> str:
    """'host busy (...; > host_busy_pct=25)' as a title says it: its first words in capitals, the rest as written (a
    setting's name upper-cased is one that does not exist)."""
    head = "host busy"
    return f"{head.upper()}{busy[len(head):]}" if busy.startswith(head) else busy


def results_table(outcome: ScenarioOutcome, title: str) -> Table:
    """One row per guest. Folded to fit TABLE_WIDTH: a figure column no guest has a value in (fps beside ML-only
    guests) is left out, GPU and validity share a column, long cells wrap."""
    if outcome.host_busy:  # every figure below is marked: the title is over all of them
        title = f"{title} — [red]{shouted(outcome.host_busy)}[/red]"
    table = Table(title=title, title_justify="left", caption=RESULTS_CAPTION, caption_justify="left")
    shown = [c for c in COLUMNS if any(c[1] in o.result.metrics for o in outcome.guests)] or list(COLUMNS[-1:])
    for header, justify in (("guest", "left"), ("profile", "left"), ("workload", "left"), ("GPU: validity", "left"),
                            ("cores", "left"), ("status", "left"), *((h, "right") for h, _, _ in shown),
                            ("CPU %", "right")):
        table.add_column(header, justify=justify, no_wrap=header in ("guest", "profile", "workload", "status"))
    for o in outcome.guests:
        m = o.result.metrics
        status = "ok" if o.result.ok else f"[red]{o.result.status}[/red]"
        cells = [fmt(m.get(key), pattern) + spread_mark(key, m) + target_mark(key, m) +
                 synthetic_mark(o.spec.data, key, m) for _, key, pattern in shown]
        cpu = fmt(o.sampled.get(f"{vocab.GUEST_CPU.key}.mean"), "{:.0f}")
        table.add_row(o.spec.guest_id, o.spec.profile, o.spec.workload,
                      guest_validity(o.placement.gpu_label, o.placement.gpu_indices, o.validity,
                                     o.validity_reason),
                      ",".join(map(str, o.placement.vcpus)), status, *cells, cpu)
    return table


def spread_mark(key: str, metrics: dict[str, float]) -> str:
    """A single run's rate with its spread, in the cell itself: ``3,344 ±2%``, its timed windows' rates' median
    absolute deviation over their median ('' under three windows: no spread to give)."""
    if key != vocab.IMAGES_PER_SEC.key or not metrics.get(key, math.nan) > 0:
        return ""
    jitter = jitter_pct(metrics)
    return f" ±{jitter:.0f}%" if jitter == jitter else ""


def target_mark(key: str, metrics: dict[str, float]) -> str:
    """The target, in the accuracy cell itself: missed ``28.90% < 99%``, met ``99.20% ≥ 99%``."""
    target = metrics.get("target_accuracy")
    if key != vocab.TEST_ACCURACY.key or target is None or target != target or key not in metrics:
        return ""
    return f" {'<' if missed_target(metrics) else '≥'} {percent(target)}"


def synthetic_mark(data: JsonObject, key: str, metrics: dict[str, float]) -> str:
    """An accuracy on synthetic look-alike data is not an MNIST/CIFAR-10 accuracy: said in the cell itself."""
    source = data.get("source")
    if key == vocab.TEST_ACCURACY.key and key in metrics and source in ("synthetic", LOOK_ALIKE):
        return f" ({source})"
    return ""


def guest_validity(gpu_label: str, gpus: list[int], validity: str, reason: str) -> str:
    """A guest's GPU and what its measurement is worth: a CPU profile (no GPU asked for) is that, not 'no GPU:
    enforced' beside another row's 'no GPU: not enforced'."""
    if not gpus and validity == ENFORCED:
        return "CPU profile (no GPU asked for)"
    return f"{gpu_label}: {validity_cell(validity, reason)}"


def validity_cell(validity: str, reason: str = "") -> str:
    color = {NOT_ENFORCED: "red", EMULATED: "yellow", EMULATED_MPS: "yellow"}.get(validity)
    text = labelled(validity, reason)
    return f"[{color}]{text}[/{color}]" if color else text


def validity_banner(validities: dict[str, str], reason: str = "") -> str | None:
    """What a comparison's ratios do and do not measure, when some phase ran without its GPU (None otherwise)."""
    weak = [label for label, v in validities.items() if v == NOT_ENFORCED]
    if not weak:
        return None
    which = "every phase" if len(weak) == len(validities) else f"phase(s) {', '.join(weak)}"
    if reason == TCG_EMULATION:
        return (f"NOT A PERFORMANCE MEASUREMENT ({TCG_EMULATION}): {which} ran in VMs whose CPU QEMU emulated "
                "(no KVM on this host), without a GPU. The ratios check that the phases run, not how fast; they are "
                "not comparable with anything measured on hardware.")
    return (f"NOT A GPU MEASUREMENT: {which} ran with the profile not enforced (no GPU: guests trained and "
            "rendered on this host's CPU). The ratios compare CPU runs of the same code under other core, rank "
            "and guest counts and their contention; they do not measure GPU speed-up or scaling, vGPU or MIG "
            "overhead, or GPU sharing, and are not comparable with the reference study's figures. Run on a GPU "
            "host, or pass strict=true to refuse such runs.")


COMPARES = {"gpu-vs-cpu": "GPU-vs-CPU", "passthrough-vs-vgpu": "passthrough-vs-vGPU", "scaling": "multi-GPU scaling",
            "multi-guest": "GPU-sharing"}  # what a comparison scenario measures, in words


def cpu_only_note(scenario: str, phases: int, had_references: bool) -> str:
    """A comparison all of whose phases ran on the CPU measures CPU runs, whatever it is named."""
    arms = "both arms" if phases == 2 else f"all {phases} phases"
    what = COMPARES.get(scenario, scenario)
    return (f"note: {arms} on the CPU: not a {what} comparison" + (
        "; the reference study's figures are GPU measurements and are not shown beside it" if had_references
        else ""))


def ratio_cell(x: float, low: float, high: float) -> str:
    if x != x:  # NaN
        return "-"
    return f"{x:.2f}" + (f" [{low:.2f}, {high:.2f}]" if low == low and high == high else "")


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
        check = ("[red]mismatch: " + "; ".join(pixels["failed"])[:60] + "[/red]" if pixels.get("failed") else
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
        f"status: {outcome.status}   validity: {outcome.validity_label}   "
        f"makespan (start barrier to last result): {fmt(outcome.makespan_s, '{:.1f}')} s   "
        + (f"data: {outcome.data.get('source', '?')} ({outcome.data.get('root', '?')})" if outcome.data
         else "data: none (the workload reads no data)"),
        f"host: {inv.cpu_model}, {inv.cpus_usable} cores; GPU: {gpus}",
        f"sampler: {s.achieved_hz:.1f} Hz achieved of {s.rate_hz:g} Hz requested, {len(s.rows)} samples, "
        f"cost {s.cpu_pct:.2f}% of one core",
    ]
    if outcome.host_busy:
        lines.append(f"note: {outcome.host_busy}: every figure above carries that load, and no verdict is drawn "
                     "from it; stop what else runs (or raise host_busy_pct), and run again")
    lines += [f"note: sampler: {n}" for n in s.notes]
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
    lines += result_notes(outcome)
    data_notes = sorted({str(o.spec.data["note"]) for o in outcome.guests if o.spec.data.get("note")})
    lines += [f"note: data: {n}" for n in data_notes]
    if "synthetic" in str(outcome.data.get("source")):
        lines.append("note: trained on SYNTHETIC look-alike data: accuracies are not MNIST/CIFAR-10 accuracies; "
                     "pass data.root=<dir holding MNIST/raw or cifar-10-batches-py> (or allow data.download)")
    lines += [f"failure: {r}" for r in outcome.reasons]
    return lines


def result_notes(outcome: ScenarioOutcome) -> list[str]:
    """What the table's cells cannot say: a missed target, a blank rate and why, a rate far from images / train s
    (each reason once, with the guests it applies to)."""
    by_reason: dict[str, list[str]] = {}
    for o in outcome.guests:
        m, gid = o.result.metrics, o.spec.guest_id
        if missed_target(m) and o.result.ok:
            precision = o.result.info.get("precision")
            trained = f", trained in {precision}" if precision and o.placement.gpus else ""  # fp16 on a GPU
            by_reason.setdefault(f"missed its target: {missed_target(m)}{trained} (strict=true makes this a "
                                 "failure)", []).append(gid)
        blank = o.result.info.get("images_per_sec_blank")
        if blank and not m.get(vocab.IMAGES_PER_SEC.key) == m.get(vocab.IMAGES_PER_SEC.key):
            by_reason.setdefault(f"images/s blank: {blank} ({blank_hint(o.spec.workload_config)})", []).append(gid)
        elif rate_gap(m):
            by_reason.setdefault(rate_gap(m), []).append(gid)
    return [f"note: {', '.join(gids)}: {reason}" for reason, gids in by_reason.items()]


def blank_hint(workload: JsonObject) -> str:
    """What would give a blank rate its timed window, from what the run was given: a run already sized by time
    that a step cap ended is told of the cap, not of size_by=time."""
    if workload.get("size_by") == "time" and workload.get("max_steps"):
        return (f"workload.max_steps={workload['max_steps']} ended the run before its timed window: raise it or "
                "drop it (null), so workload.size_by=time can fill workload.min_window_s")
    return ("the timed window workload.min_timed_steps / min_timed_s a rate needs; workload.size_by=time sizes the "
            "run to workload.min_window_s, or fewer warm-up steps")


def rate_gap(m: dict[str, float]) -> str:
    """Where steady-state images/s and images / train s differ by more than 10 %: the warm-up's share says why."""
    rate, images, train = (m.get(k, math.nan) for k in (vocab.IMAGES_PER_SEC.key, vocab.IMAGES.key,
                                                         vocab.TRAIN_TIME.key))
    timed = m.get("timed_s", math.nan)
    if not (rate > 0 and train > 0 and images > 0) or abs(images / train / rate - 1) <= 0.10:
        return ""
    warm = train - timed if timed == timed else math.nan
    return (f"images/s {rate:,.0f} is the steady state over {m.get('timed_steps', math.nan):.0f} timed steps "
            f"({timed:.2f} s); images / train s = {images / train:,.0f}: warm-up took {warm:.2f} s "
            f"({warm / train:.0%} of train s)")


def comparison_tables(rows: list[PhaseRow], title: str, normalised: bool = True) -> list[Table]:
    """Per phase, medians over its repeats, in two tables keyed by phase so that each fits TABLE_WIDTH without a word
    broken over two lines (a profile 'passthrough-4gpu x 4' beside ratios and verdicts in one table did not): the
    throughput (images/s, normalised: its ratio to the baseline with its 95 % CI and verdict), then the time (train s,
    its ratio and verdict), CPU, GPU and the reference study's figure."""
    per_image = normalised and any(r.time_basis == TIME_PER_IMAGE for r in rows)
    ratio = ("x base [95% CI]", "verdict") if normalised else ()
    caption = "images/s: all guests together, medians over n repeats" + (
        "; x base: median of the per-repeat ratios to the baseline, [95 % CI] on the log scale" if ratio else "")
    throughput = Table(title=title, title_justify="left", caption_justify="left", caption=caption)
    for col in ("phase", "profile", "validity", "n", "images/s", *ratio):
        throughput.add_column(col, justify="right" if col in ("n", "images/s", "x base [95% CI]") else "left",
                              no_wrap=col == "phase")  # the key of both tables: whole on one line
    for r in rows:
        status = "" if r.status == "ok" else f" [red]({r.status})[/red]"
        busy = " [red](host busy)[/red]" if r.host_busy else ""
        x = (ratio_cell(r.throughput_x, r.throughput_x_ci_low, r.throughput_x_ci_high), r.throughput_verdict)
        throughput.add_row(r.label + status, r.profile + (f" x {r.guests}" if r.guests > 1 else ""),
                           validity_cell(r.validity) + busy, str(r.n), fmt(r.images_per_sec, "{:,.0f}"),
                           *(x if ratio else ()))
    return [throughput, time_table(rows, normalised, per_image)]


def time_table(rows: list[PhaseRow], normalised: bool, per_image: bool) -> Table:
    """The comparison's second table: train s and its ratio with the verdict, CPU, GPU and the reference study's
    figure, by phase."""
    reference = ("reference study (M60)",) if any(r.reference for r in rows) else ()
    gpu = ("GPU util %",) if any(r.gpu_util_pct == r.gpu_util_pct for r in rows) else ()  # none without NVML
    ratio = (("s/image x base [95% CI]" if per_image else "x base [95% CI]"), "verdict") if normalised else ()
    caption = "train s: the slowest guest; CPU %: the guests' mean (100 = one core) / the host's (100 = all cores)"
    if per_image:
        caption += ("; s/image x base: time per image over the baseline's, the inverse of the images/s ratio (the "
                    "phases were sized by time: train s is each one's window, not the time of equal work)")
    t = Table(caption=caption, caption_justify="left")
    for col in ("phase", "train s", *ratio, "CPU %", *gpu, *reference):
        t.add_column(col, justify="left" if col in ("phase", "verdict", *reference) else "right",
                     no_wrap=col == "phase")
    for r in rows:
        x = (ratio_cell(r.time_x, r.time_x_ci_low, r.time_x_ci_high), r.time_verdict)
        t.add_row(r.label, fmt(r.train_time_s, "{:.1f}"), *(x if ratio else ()),
                  f"{fmt(r.guest_cpu_pct, '{:.0f}')} / {fmt(r.host_cpu_pct, '{:.0f}')}",
                  *((fmt(r.gpu_util_pct, "{:.0f}"),) if gpu else ()), *((r.reference or "-",) if reference else ()))
    return t



def sweep_table(rows: list[SweepRow], title: str) -> Table:
    t = Table(title=title, title_justify="left", caption="images/s: all guests together, median [95 % CI] over "
              "the guests' repeats (repeats=N)")
    for col in ("job", "point", "profile", "workload", "status", "validity", "n", "images/s", "[95% CI]", "fps"):
        t.add_column(col, justify="right" if col in ("n", "images/s", "[95% CI]", "fps") else "left")
    for r in rows:
        iv = r.images_per_sec
        spread = f"[{iv.low:,.0f}, {iv.high:,.0f}]" if iv.spread else ("no spread" if iv.n else "-")
        t.add_row(r.job, r.point or "-", r.profile, r.workload, r.status, validity_cell(r.validity), str(iv.n),
                  fmt(iv.median, "{:,.0f}"), spread, fmt(r.fps, "{:,.1f}"))
    return t


def sweep_csv_rows(rows: list[SweepRow]) -> list[dict[str, object]]:
    return [{"job": r.job, "point": r.point, "profile": r.profile, "workload": r.workload, "status": r.status,
             "validity": r.validity,
             "n": r.images_per_sec.n, "images_per_sec": r.images_per_sec.median,
             "images_per_sec_ci_low": r.images_per_sec.low, "images_per_sec_ci_high": r.images_per_sec.high,
             "fps": r.fps, "reason": r.reason, "run_dir": r.run_dir} for r in rows]


def sweep_notes(rows: list[SweepRow]) -> list[str]:
    """One line for each job that did not finish ok, named by its point, with its reason."""
    return [f"job {r.job} ({r.point or 'no point recorded'}): {r.status}" + (f": {r.reason}" if r.reason else "")
            for r in rows if r.status != "ok"]
