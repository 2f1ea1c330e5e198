"""The study's end, once its parts ran: each part's planned seconds beside what it took, the plan and the settings
on the study run, and the report read back from the store (``outputs/study/<time>/report.{md,html}``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from suites import store_keys as keys
from suites.campaign import MEASURED, CampaignRun, Conclude, Conclusion, overran
from suites.pipeline.orchestrate import best_effort
from suites.record import mlflow_runs
from suites.study import report as study_report
from suites.study import results
from suites.study.campaign import Study
from suites.study.plan import Skip, StudyPlan


def show_timing(out: Console, sp: StudyPlan, run: CampaignRun) -> None:
    """Each part's planned seconds beside what it took, a part past twice its estimate said."""
    took = {p.name: p.seconds for p in run.left(MEASURED)}
    table = Table(title="study: the parts, planned and taken", title_justify="left",
                  caption="estimate: the planner's (seconds per phase run from: " + "; ".join(
                      f"{w} {how}" for w, how in sp.sources.items()) + ")", caption_justify="left")
    for col in ("part", "estimate s", "took s", ""):
        table.add_column(col, justify="right" if col.endswith(" s") else "left")
    for name, planned in sp.part_estimates.items():
        seconds = took.get(name)
        table.add_row(name, f"{planned:.0f}", f"{seconds:.0f}" if seconds is not None else "not run",
                      overran(planned, seconds or 0.0))
    out.print(table)


def record_plan(run: CampaignRun, study: Study, sp: StudyPlan, elapsed: float) -> None:
    """The plan, the settings, how long it took and where (host, GPUs, git SHA, libraries) on the study run."""
    settings_params = {f"study.{k}": ",".join(v) if isinstance(v, list) else v for k, v in vars(study.settings).items()}
    params = {**study.inv.as_params(), **settings_params,
              "tier": sp.tier, "repeats": sp.repeats, "estimate_s": round(sp.estimate_s), "gpus": sp.gpus,
              "elapsed_s": round(elapsed), "parts": ",".join(p.name for p in sp.parts)}
    tags = {keys.SKIPS: json.dumps([[s.what, s.why] for s in sp.skips]),
            keys.ESTIMATES_FROM: json.dumps(sp.sources)}
    metrics = {"elapsed_s": elapsed, **{f"{name}.estimate_s": s for name, s in sp.part_estimates.items()},
               **{f"{p.name}.actual_s": p.seconds for p in run.left(MEASURED)}}
    run.record(mlflow_runs.ParentResults(params, metrics, tags))


def publish(run: CampaignRun, out: Console) -> list[Path]:
    """The report, read back from the store the study run is in."""
    ref = run.nest.parent
    if ref is None:
        return []

    def build() -> list[Path]:
        study = results.read_study(ref.tracker.uri, run.campaign.parts[0].comp.cfg.experiment, ref.run_id)
        files = study_report.write(study, run.run_dir)
        out.print(study_report.console_table(study))
        return files

    return best_effort(out, "study report", build) or []


def concluder(study: Study, sp: StudyPlan, out: Console) -> Conclude:
    """What the executor calls once the parts ran: the timing, the plan recorded, the report; what was skipped
    (placed nowhere, past the deadline, left by an interrupt) joins the study's skips."""
    t0 = time.time()

    def conclude(run: CampaignRun) -> Conclusion:
        sp.skips += [Skip(p.name, p.why) for p in run.parts if p.how != MEASURED]
        show_timing(out, sp, run)
        record_plan(run, study, sp, time.time() - t0)
        return Conclusion(publish(run, out))

    return conclude
