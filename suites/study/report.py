"""``make study``'s report: every figure of the reference study beside this host's, as Markdown + HTML + PNGs.

Its numbers come from the store (:func:`suites.study.results.read_study`):
episode 1's rows from each part's comparison run (median ratio, 95 % CI, n,
validity, verdict), episode 2's from the mixed scenarios' report
(:mod:`suites.render.mixed_report`), and a row for every figure the host could
not produce, with the reason it was skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from suites import store_keys as keys
from suites.render import mixed_plots, mixed_report
from suites.render.markdown import table as markdown_table
from suites.render.markdown import write_page
from suites.render.plots import error_bars, pyplot, save, titled, wrapped
from suites.render.tables import validity_banner
from suites.study.plan import EPISODE_1, StudyPart, episode_2
from suites.study.results import ReferenceStudy
from suites.study.settings import StudySettings
from suites.validity import is_not_enforced

HEADERS = ("part", "phase", "reference study (4 x M60)", "this host", "[95% CI]", "n", "validity", "verdict")


@dataclass
class Row:
    """One figure of the reference study and this host's answer to it (or why there is none)."""

    part: str
    phase: str
    reference: str
    ref_value: float | None  # the study's ratio, where it is one
    value: float = math.nan  # this host's median ratio
    low: float = math.nan
    high: float = math.nan
    figure: str = "skipped"  # this host's figure as shown
    n: str = "-"
    validity: str = "-"
    verdict: str = "-"  # or, for a row with no figure, why

    def cells(self) -> list[str]:
        interval = f"[{self.low:.2f}, {self.high:.2f}]" if self.low == self.low and self.high == self.high else (
            "no spread" if self.n == "1" else "-")
        return [self.part, self.phase, self.reference, self.figure, interval, self.n, self.validity, self.verdict]


def all_parts(study: ReferenceStudy) -> list[StudyPart]:
    """Every part of the study as it was configured (episode 2's profiles come from the study run's params), with
    every reference profile's row: one left out of study.profiles is a row that says so."""
    configured = configured_profiles(study)
    settings = StudySettings(profiles=configured + [r for r in StudySettings().profiles if r not in configured],
                             consolidation_profile=study.params.get("study.consolidation_profile", "m60-2q"))
    return [*EPISODE_1, *episode_2(settings)]


def configured_profiles(study: ReferenceStudy) -> list[str]:
    return [s for s in study.params.get("study.profiles", "").split(",") if s] or StudySettings().profiles


def why_skipped(study: ReferenceStudy, part: str, phase: str) -> str:
    """The skip that covers this part (or this phase of it), else why the store has no figure."""
    if part == "mixed" and phase not in configured_profiles(study):
        return f"not run: not in study.profiles ({', '.join(configured_profiles(study))})"
    for what, why in study.skips:
        if what == part or what == f"{part} {phase}" or (what.startswith(f"{part} ") and phase in what.split()):
            return why
    return "not measured (the part failed or was interrupted)" if part in study.parts else "not run"


def episode_1_rows(study: ReferenceStudy) -> list[Row]:
    rows = []
    for part in (p for p in all_parts(study) if p.episode == 1):
        found = study.parts.get(part.name)
        for ref in part.references:
            row = Row(part.name, ref.phase, ref.text, ref.value)
            m = found.metrics if found else {}
            key = f"{ref.phase}.{ref.metric}"
            if key not in m or math.isnan(m[key]):
                row.verdict = why_skipped(study, part.name, ref.phase)
            else:
                row.value, row.low, row.high = m[key], m.get(f"{key}.ci_low", math.nan), m.get(f"{key}.ci_high",
                                                                                                  math.nan)
                row.figure, row.n = f"{row.value:.2f}x", f"{m.get(f'{ref.phase}.n', 1):.0f}"
                tags = found.tags if found else {}
                row.validity = tags.get(keys.validity_of(ref.phase), "?")
                what = "time" if ref.metric == "time_x" else "throughput"
                row.verdict = tags.get(keys.verdict(ref.phase, what), "?")
            rows.append(row)
    return rows


def episode_2_rows(study: ReferenceStudy) -> list[Row]:
    """The mixed scenario's verdict per profile, and the consolidation score, beside the reference's sentence."""
    rep, rows = study.episode_2, []
    said = mixed_report.verdicts(rep) if rep.mixed else {}
    for part in (p for p in all_parts(study) if p.episode == 2):
        for ref in part.references:
            row = Row(part.name, ref.phase, ref.text, None)
            if part.name == "mixed" and ref.phase in rep.mixed:
                d = rep.mixed[ref.phase]
                row.figure = (f"CAD {d.get('cad_run_time_increase_pct', math.nan):+.1f} % "
                              f"{mixed_report.interval(d, 'cad_run_time_increase_pct')}, ML "
                              f"{d.get('ml_train_time_increase_pct', math.nan):+.1f} % "
                              f"{mixed_report.interval(d, 'ml_train_time_increase_pct')}; concurrent/sequential "
                              f"{d.get('concurrent_vs_sequential', math.nan):.2f}")
                row.n = f"{d.get('ml_train_time_increase_pct.n', 1):.0f}"
                row.validity = mixed_report.profile_validity(rep, ref.phase)
                row.verdict = said[ref.phase][0]
            elif part.name == "consolidation" and rep.consolidation:
                row.figure = mixed_report.consolidation_headline(rep)
                row.n, row.validity = "1", ", ".join(sorted(set(rep.validity.values()))) or "?"
                row.verdict = f"stopped: {rep.stop_reason or '?'}"
            else:
                row.verdict = why_skipped(study, part.name, ref.phase)
            rows.append(row)
    return rows


def banner(study: ReferenceStudy) -> str | None:
    validities = {f"{name}/{k.removeprefix(keys.VALIDITY_PREFIX)}": v for name, part in study.parts.items()
                  for k, v in part.tags.items() if k.startswith(keys.VALIDITY_PREFIX)}
    said = [b for b in (ended_early(study), validity_banner(validities)) if b]
    return " ".join(said) or None


def ended_early(study: ReferenceStudy) -> str:
    """What a study stopped before its end holds ('' for one that ran to its end, or is running: the study's own
    report is written before its run ends; one whose runner was killed is ended KILLED by the next command on the
    store, `make report` included: suites/record/owed.py)."""
    if study.status in ("FINISHED", "RUNNING"):
        return ""
    why = study.stopped or "no reason recorded"
    return (f"STUDY {study.status}, NOT ENDED: {why}. {len(study.parts)} part(s) recorded before that; the rest "
            "of the table was not measured.")


def markdown(study: ReferenceStudy, figures: list[str]) -> str:
    def table(rows: list[Row]) -> list[str]:
        return markdown_table(HEADERS, [r.cells() for r in rows])

    p = study.params
    lines = ["# The reference study (4 x Tesla M60), reproduced on this host", ""]
    warning = banner(study)
    if warning:
        lines += [f"> **{warning}**", ""]
    lines += ["   ".join(f"{k}: {v}" for k, v in study.header.items()), "",
              f"MLflow study run: {study.run_id}; sizes: {p.get('tier', '?')}, "
              f"{p.get('repeats', '?')} repeat(s) per phase, interleaved; planned {p.get('estimate_s', '?')} s "
              f"for study.budget_s={p.get('study.budget_s', '?')}, took {p.get('elapsed_s', '?')} s", "",
              "Ratios are medians of per-repeat ratios against the part's first phase, with their 95 % confidence "
              "interval (Student t, n >= 3; bootstrap, n = 2); validity says whether the profile was enforced, "
              "emulated on another GPU, or not enforced (no GPU).", "",
              "## Episode 1: training with and without GPUs, scaling, passthrough vs vGPU, one VM vs four", "",
              *table(episode_1_rows(study)), "",
              "## Episode 2: 3D CAD and ML training sharing a GPU, per vGPU profile", "",
              *table(episode_2_rows(study)), ""]
    if study.episode_2.mixed:
        lines += ["Per-profile details (CAD p95 frame times, sequential and concurrent time, CPU and GPU use) are "
                  "in the mixed part's own report under its run directory.", ""]
    lines += ["## Skipped on this host", "", *(f"- {what}: {why}" for what, why in study.skips), ""]
    if not study.skips:
        lines[-2:-1] = ["- not known: the study did not end" if ended_early(study) else "- nothing"]
    lines += [f"![{f}]({f})" for f in figures]
    return "\n".join(lines) + "\n"


def console_table(study: ReferenceStudy) -> Table:
    t = Table(title="the reference study beside this host (from the MLflow store)", title_justify="left")
    for h in HEADERS:
        t.add_column(h, justify="right" if h in ("this host", "n") else "left")
    for row in [*episode_1_rows(study), *episode_2_rows(study)]:
        t.add_row(*row.cells())
    return t


def draw_ratios(study: ReferenceStudy, folder: Path) -> Path | None:
    """Episode 1's ratios beside the reference study's: bars with their 95 % CI, the study's figure as a mark."""
    rows = [r for r in episode_1_rows(study) if r.value == r.value]
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(rows)), 4), constrained_layout=True)
    xs = list(range(len(rows)))
    values = [r.value for r in rows]
    ax.bar(xs, values, 0.5, label="this host (median, 95 % CI)", capsize=3,
           yerr=error_bars(values, [r.low for r in rows], [r.high for r in rows]))
    ax.scatter(xs, [r.ref_value if r.ref_value is not None else math.nan for r in rows], marker="D", color="C3",
               zorder=3, label="reference study (4 x M60)")
    ax.set_xticks(xs, [wrapped(f"{r.part}\n{r.phase}\n{r.validity}", 14) for r in rows], fontsize=7)
    ax.set_ylabel("ratio to the part's baseline phase (x)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False)
    validity = ", ".join(sorted({r.validity for r in rows}))
    title = "episode 1 beside the reference study"
    titled(fig, title, f"profile {validity}" + ("; NOT a GPU measurement" if is_not_enforced(validity) else ""))
    return save(fig, folder / "episode1_ratios.png", title, validity)


def write(study: ReferenceStudy, folder: Path) -> list[Path]:
    """report.md, report.html and the figures into folder; every file written."""
    folder.mkdir(parents=True, exist_ok=True)
    figures = [f for f in [draw_ratios(study, folder)] if f is not None]
    if study.episode_2.mixed or study.episode_2.consolidation:
        figures += mixed_plots.draw(study.episode_2, folder)
    return [*write_page(folder, "report", markdown(study, [f.name for f in figures])), *figures]
