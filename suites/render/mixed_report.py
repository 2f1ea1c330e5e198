"""The mixed and consolidation scenarios' report, as Markdown + HTML + PNGs and console tables.

Its numbers come from the store (:func:`suites.record.reader.build`), never
from a runner's memory. ``make report`` (:mod:`suites.commands.report`) and the
notebook ``notebooks/consolidation_report.ipynb`` render through here.
"""

from __future__ import annotations

import math
from pathlib import Path

from rich.table import Table

from suites.record.reader import MixedReport
from suites.render import mixed_plots
from suites.render.markdown import table, write_page
from suites.render.tables import fmt, validity_banner
from suites.run import marks
from suites.run.mixed import mixed_verdict
from suites.validity import NOT_ENFORCED, weakest

FIGURES = ("slowdown.png", "sequential_vs_concurrent.png", "cpu_utilisation.png", "consolidation.png")


# --- rendering ---------------------------------------------------------------------------------------
MIXED_COLUMNS = (  # (header, key, format): each header names its statistic; every figure a median over the repeats
    ("CAD run time +%", "cad_run_time_increase_pct", "{:+.1f}"),
    ("ML train time +%", "ml_train_time_increase_pct", "{:+.1f}"),
    ("CAD p95 frame ms alone", "cad_p95_frame_ms_alone", "{:.1f}"),
    ("CAD p95 frame ms mixed", "cad_p95_frame_ms_mixed", "{:.1f}"),
    ("sequential s", "sequential_s", "{:.1f}"),
    ("concurrent s", "concurrent_s", "{:.1f}"),
    ("concurrent/sequential (median of ratios)", "concurrent_vs_sequential", "{:.2f}"),
    ("overlap % (worst guest)", "overlap_pct", "{:.0f}"),
    ("CPU % cad", "cad.host_cpu_pct", "{:.0f}"),
    ("CPU % mixed", "mixed.host_cpu_pct", "{:.0f}"),
    ("CPU % ml", "ml.host_cpu_pct", "{:.0f}"),
    ("GPU % mixed", "mixed.gpu_util_pct", "{:.0f}"),
    ("energy J mixed", "mixed.energy_J", "{:.0f}"),
)




def interval(d: dict[str, float], key: str) -> str:
    lo, hi = d.get(f"{key}.ci_low", math.nan), d.get(f"{key}.ci_high", math.nan)
    return f"[{lo:+.1f}, {hi:+.1f}]" if lo == lo and hi == hi else "no spread"


def profile_validity(rep: MixedReport, profile: str) -> str:
    return weakest([v for label, v in rep.validity.items() if label.startswith(f"{profile}/")]) \
        if any(label.startswith(f"{profile}/") for label in rep.validity) else "?"


def verdicts(rep: MixedReport) -> dict[str, tuple[str, str]]:
    """Per profile: does it consolidate? (judged by run.mixed.mixed_verdict on the figures from the store)"""
    cad, ml = rep.qos.get("qos_cad_slowdown_pct", 5.0), rep.qos.get("qos_ml_slowdown_pct", 15.0)
    out = {}
    found = rep.marks.get("mixed", [])
    for p, d in rep.mixed.items():
        said, sentence = mixed_verdict(p, d, cad, ml, rep.qos.get("host_busy_pct", math.inf))
        if marks.inconclusive(found) and not said.startswith("inconclusive"):
            said = f"inconclusive ({next(m.text for m in found if m.voids)})"
        if profile_validity(rep, p) == NOT_ENFORCED:
            sentence += (f" — NOT a GPU measurement (profile not enforced: {rep.validity_reason})"
                         if rep.validity_reason else " — NOT a GPU measurement (profile not enforced: CPU stand-in)")
        if found:
            sentence += f" — {marks.text_of(found)}"
        out[p] = (said, sentence)
    return out


SPREAD_HEADERS = ("CAD +% [95% CI]", "ML +% [95% CI]", "n", "validity", "verdict", "reference study (2 x M60)")


def spread_cells(rep: MixedReport, profile: str, said: str) -> dict[str, str]:
    """A profile's intervals, n, validity, verdict and the reference study's finding, by column header."""
    d = rep.mixed[profile]
    return dict(zip(SPREAD_HEADERS, (
        interval(d, "cad_run_time_increase_pct"), interval(d, "ml_train_time_increase_pct"),
        fmt(d.get("ml_train_time_increase_pct.n", 1.0), "{:.0f}"), profile_validity(rep, profile),
        said, reference(rep, profile)), strict=True))


def reference(rep: MixedReport, profile: str) -> str:
    """The reference study's finding, only beside phases that had their GPU (as gpu-vs-cpu shows it): a CPU
    stand-in's slowdowns are not the M60's."""
    if profile_validity(rep, profile) == NOT_ENFORCED:
        return "- (no GPU: not comparable)"
    return rep.references.get(profile, "-")


def mixed_rows(rep: MixedReport) -> list[list[str]]:
    said = verdicts(rep)
    return [[p, *(fmt(d.get(k), f) for _, k, f in MIXED_COLUMNS), *spread_cells(rep, p, said[p][0]).values()]
            for p, d in rep.mixed.items()]


def banner(rep: MixedReport) -> str | None:
    return validity_banner(rep.validity)


def consolidation_rows(rep: MixedReport) -> list[list[str]]:
    c, rows = rep.consolidation, []
    for n in sorted(int(k[1:].split(".")[0]) for k in c if k.endswith(".meets_qos")):
        failed = c.get(f"n{n}.failed", 0.0)
        meets = "inconclusive" if c.get(f"n{n}.inconclusive") else "yes" if c.get(f"n{n}.meets_qos") else \
            f"no verdict: {failed:.0f} guest(s) failed" if failed else "no"
        rows.append([str(n), fmt(c.get(f"n{n}.p95_frame_ms_worst"), "{:.1f}"),
                     fmt(c.get(f"n{n}.ml_slowdown_pct"), "{:+.1f}"), fmt(c.get(f"n{n}.host_cpu_pct"), "{:.0f}"),
                     meets])
    return rows


def consolidation_headline(rep: MixedReport) -> str:
    """'N CAD guest(s) per GPU at QoS (n=3 per count, every repeat at QoS)' ('n=1: no spread' with one): 'per GPU'
    only where the guests had one; a score that a mark voids is 'inconclusive', and every mark follows it
    (run/marks.py)."""
    count = rep.consolidation.get("guests_at_qos", math.nan)
    on_gpu = bool(rep.validity) and all(v != NOT_ENFORCED for v in rep.validity.values())
    where = "per GPU" if on_gpu else "beside the ML guest (no GPU: not a per-GPU figure)"
    found = rep.marks.get("consolidation", [])
    head = "inconclusive, " if marks.inconclusive(found) else ""
    repeats = int(max((v for k, v in rep.consolidation.items() if k.endswith(".repeats")), default=1))
    n = "n=1: no spread" if repeats <= 1 else f"n={repeats} per count, every repeat at QoS"
    return f"{head}{count:.0f} CAD guest(s) {where} at QoS ({n})" + (
        f" — {marks.text_of(found)}" if found else "")


def longest_word(texts: list[str]) -> int | None:
    """A column's narrowest width that never breaks inside a word: a number or ``key=value`` folded across lines
    (``host_busy_pct=2`` / ``5)``) reads as another figure."""
    return max((len(w) for t in texts for w in t.split()), default=None)


def with_interval(d: dict[str, float], key: str, pattern: str) -> str:
    """'+5.0 [+1.0, +9.0]': a median and its 95 % CI in one cell."""
    lo, hi = d.get(f"{key}.ci_low", math.nan), d.get(f"{key}.ci_high", math.nan)
    spread = f" [{pattern.format(lo)}, {pattern.format(hi)}]" if lo == lo and hi == hi else " (no spread)"
    return fmt(d.get(key), pattern) + spread


def mixed_console_tables(rep: MixedReport) -> list[Table]:
    """The verdict per profile, then the details; each header names its statistic, each folded to fit 120 columns."""
    said = verdicts(rep)
    t = Table(title="mixed CAD + ML, per profile: the verdict (from the MLflow store; medians over the repeats)",
              title_justify="left", caption_justify="left", caption=(
                  "CAD run time +%: the CAD guests' run time, mixed vs alone; ML train time +%: the ML guest's time "
                  "per image (its steady rate), mixed vs alone; concurrent/sequential: the mixed makespan over the "
                  "cad + ml makespans (ml's scaled to the images trained mixed), the median of the per-repeat ratios; "
                  "[95% CI] on the log scale of each ratio; a verdict needs the guests' timed windows to overlap "
                  "≥ 90 %"))
    cells = {p: spread_cells(rep, p, said[p][0]) for p in rep.mixed}
    for h in ("profile", "CAD run time +% [95% CI]", "ML train time +% [95% CI]", "concurrent/ sequential [95% CI]",
              "n", "validity", "verdict"):
        texts = [c[h] for c in cells.values()] if h in SPREAD_HEADERS else [c.get(h, "") for c in cells.values()]
        t.add_column(h, justify="left" if h in ("profile", "validity", "verdict") else "right", overflow="fold",
                     min_width=longest_word(texts))
    for p, d in rep.mixed.items():
        c = cells[p]
        t.add_row(p, with_interval(d, "cad_run_time_increase_pct", "{:+.1f}"),
                  with_interval(d, "ml_train_time_increase_pct", "{:+.1f}"),
                  with_interval(d, "concurrent_vs_sequential", "{:.2f}"), c["n"], c["validity"], c["verdict"])
    # the reference study's finding in a table of its own: beside the verdict it ran the row past 120 columns
    found = {p: c["reference study (2 x M60)"] for p, c in cells.items() if c["reference study (2 x M60)"] not in
             ("", "-")}
    refs = Table(title="mixed CAD + ML, per profile: the reference study's finding (2 x M60)", title_justify="left")
    refs.add_column("profile")
    refs.add_column("reference study (2 x M60)", overflow="fold")
    for p, text in found.items():
        refs.add_row(p, text)
    details = Table(title="mixed CAD + ML, per profile: the details (medians over the repeats)", title_justify="left")
    cols = (("CAD p95 frame ms alone", "cad_p95_frame_ms_alone", "{:.1f}"),
            ("CAD p95 frame ms mixed", "cad_p95_frame_ms_mixed", "{:.1f}"),
            ("sequential s", "sequential_s", "{:.1f}"), ("concurrent s", "concurrent_s", "{:.1f}"),
            ("overlap % (worst guest)", "overlap_pct", "{:.0f}"), ("GPU % mixed", "mixed.gpu_util_pct", "{:.0f}"),
            ("energy J mixed", "mixed.energy_J", "{:.0f}"))
    for h in ("profile", *(h for h, _, _ in cols), "host CPU % cad / mixed / ml"):
        details.add_column(h, justify="left" if h == "profile" else "right", overflow="fold")
    for p, d in rep.mixed.items():
        cpu = " / ".join(fmt(d.get(f"{k}.host_cpu_pct"), "{:.0f}") for k in ("cad", "mixed", "ml"))
        details.add_row(p, *(fmt(d.get(k), f) for _, k, f in cols), cpu)
    return [t, *([refs] if found else []), details]


def console_tables(rep: MixedReport) -> list[Table]:
    tables = []
    if rep.mixed:  # the answer first, the details below it
        tables.extend(mixed_console_tables(rep))
    if rep.consolidation:
        t = Table(title=f"consolidation on {rep.consolidation_profile}: {consolidation_headline(rep)}; stopped: "
                        f"{rep.stop_reason or '?'}", title_justify="left")
        for h in ("CAD guests", "worst p95 ms", "ML slowdown %", "host CPU %", "meets QoS"):
            t.add_column(h, justify="right")
        for row in consolidation_rows(rep):
            t.add_row(*row)
        tables.append(t)
    return tables


def markdown(rep: MixedReport, figures: list[str]) -> str:
    lines = ["# Mixed CAD + ML workloads: consolidation report", ""]
    warning = banner(rep)
    if warning:
        lines += [f"> **{warning}**", ""]
    lines += ["   ".join(f"{k}: {v}" for k, v in rep.header.items()), "",
              f"MLflow comparison runs: {', '.join(rep.sources) or 'none found'}", ""]
    if rep.mixed:
        lines += ["## Verdict", "", *(f"- {sentence}" for _, sentence in verdicts(rep).values()), "",
                  "## Per profile (phase 1 CAD alone, phase 2 mixed, phase 3 ML alone)", "",
                  *table(["profile", *(h for h, _, _ in MIXED_COLUMNS), *SPREAD_HEADERS], mixed_rows(rep)), ""]
    if rep.consolidation:
        lines += [f"## Consolidation on {rep.consolidation_profile}: {consolidation_headline(rep)}", "",
                  f"Stopped: {rep.stop_reason or '?'}", "",
                  *table(["CAD guests", "worst p95 ms", "ML slowdown %", "host CPU %", "meets QoS"],
                         consolidation_rows(rep)), ""]
    lines += [f"![{f}]({f})" for f in figures]
    return "\n".join(lines) + "\n"


def write(rep: MixedReport, folder: Path) -> list[Path]:
    """report.md, report.html and the figures into folder; returns every file written."""
    folder.mkdir(parents=True, exist_ok=True)
    figures = mixed_plots.draw(rep, folder)
    return [*write_page(folder, "report", markdown(rep, [f.name for f in figures])), *figures]
