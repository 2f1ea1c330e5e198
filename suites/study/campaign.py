"""The reference study as a campaign: its settings and this host read, the parts planned (and planned again with
this host's trial runs), each composed, checked and fitted to ``study.budget_s``, before anything starts; a problem is
one ConfigError (or BenchError) for the command to say in one line."""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from gpu_probe import inventory
from gpu_probe.inventory import Inventory
from suites import store_keys as keys
from suites.backends.corelock import describe, held_by_others
from suites.backends.ray.cluster import cluster_gpus
from suites.campaign import TRIAL_SHARE, Campaign, CampaignPart, cached_trials, compose_part, time_trials
from suites.config import stand_in
from suites.config.compose import Composition, compose_run
from suites.config.schema import BackendName
from suites.errors import ConfigError
from suites.pipeline.orchestrate import say
from suites.pipeline.prechecks import refuse_run_dirs, require_parseable
from suites.record.outdirs import require_output_dir
from suites.run_kinds import RunKind
from suites.study.plan import PLAN_SHARE, Measured, StudyPlan, plan_study, workloads_of
from suites.study.settings import StudySettings, load_settings, load_timings
from suites.workloads import workload_class


@dataclass
class Study:
    """What the study is planned from: its settings, this host, the bench overrides every part gets."""

    settings: StudySettings
    inv: Inventory
    overrides: list[str]
    gpus: int  # this host's NVIDIA GPUs, or with backend=ray the cluster's
    gpu_status: str
    missing: dict[str, str]  # optional parts of the suite this Python lacks -> the skip line
    known: Measured  # what is known of this host before any trial run (make gpu-check's seconds, its cores)

    def plan(self, measured: Measured | None = None) -> StudyPlan:
        return plan_study(self.gpus, self.missing, self.settings, measured or self.known)


def missing_components() -> dict[str, str]:
    """Optional parts of the suite this Python lacks (what their workloads require), each with its skip line."""
    out = {}
    for component, workload, loss in (("tensorflow", "mnist-tf", "Keras rows skipped"),
                                      ("moderngl", "graphics-replay", "CAD guests cannot render")):
        lacking = workload_class(workload).missing()
        if lacking:
            out[component] = f"{', '.join(lacking)} not installed: {loss}"
    return out


def study_of(mine: list[str], overrides: list[str]) -> Study:
    """The settings and this host, every override checked before anything is measured."""
    require_parseable(overrides)
    refuse_run_dirs(overrides, "study", "study.out_dir", "outputs/study")
    settings = load_settings(mine)
    cfg = compose_run(overrides).cfg
    inv = stand_in.inventory_for(cfg, inventory.collect())  # make rehearse: this host with the device's GPU
    # a fleet of VMs: each part placed by its nodes' own GPUs, and skipped with the cluster's offer where they are not
    gpus, status = cluster_gpus(cfg.ray) if cfg.backend is BackendName.ray else (len(inv.gpus), inv.gpu_status)
    return Study(settings, inv, overrides, gpus, status, missing_components(),
                 Measured(gpu_work=load_timings(settings.timings), cores=inv.cpus_usable))


def compose_parts(sp: StudyPlan, overrides: list[str]) -> dict[str, Composition]:
    """Every part composed before anything starts; a part that does not compose is one ConfigError naming it."""
    comps = {}
    for part in sp.parts:
        comp = compose_part([*sp.overrides(part), *overrides], f"study part {part.name}")
        if part.episode == 1:  # the phases this host can run (the planner dropped the others, saying why)
            comp.runs = [r for r in comp.runs if r.label in part.labels]
        comps[part.name] = comp
    return comps


def measured_plan(study: Study, sp: StudyPlan, trial: bool, out: Console) -> StudyPlan:
    """The plan again with this host's trial runs of the workloads ``sp`` runs added to what was known (``trial``:
    time what the cache lacks, else the cache alone); ``sp`` itself where nothing was measured or
    study.trials=false."""
    if not study.settings.trials:
        return sp
    held = held_by_others(sorted(os.sched_getaffinity(0)))
    if trial and held:  # a trial run beside another run would time that run's load (and queue for its cores)
        say(out)(f"study: no trial runs (another benchmark run holds {describe(held)}): planned from what is cached")
    t0, where = time.monotonic(), Path(study.settings.out_dir)
    timed = time_trials(workloads_of(sp.parts), sp.tier, study.overrides, where, study.inv,
                             lambda line: say(out)(f"study: {line}"),
                             study.settings.budget_s * TRIAL_SHARE) \
        if trial and not held else cached_trials(where, study.inv)
    if not timed:
        return sp
    return study.plan(replace(study.known, trials=timed, spent_s=time.monotonic() - t0))


def require_fits(sp: StudyPlan, budget_s: float) -> None:
    """A plan trimmed to one part and still over the budget would stop at its deadline: refused before it starts."""
    if sp.estimate_s > budget_s:
        raise ConfigError(f"study.budget_s={budget_s:g}: the smallest study this host can run ("
                          f"{', '.join(p.name for p in sp.parts)}, {sp.tier} sizes) takes about {sp.estimate_s:.0f} s "
                          f"by its estimate; give study.budget_s >= {math.ceil(sp.estimate_s / PLAN_SHARE)}")


def campaign_of(study: Study, trial: bool, started: float, out: Console) -> tuple[StudyPlan, Campaign]:
    """The study's plan (with trial runs where ``trial``) and its campaign: every part composed and its folders checked;
    the deadline ``study.budget_s`` after ``started`` (the trial runs' seconds are the study's too)."""
    sp = study.plan()
    require_output_dir(study.settings.out_dir, "study.out_dir")  # the study's own folder first, then its parts'
    comps = compose_parts(sp, study.overrides)  # each part's store, cache and artifact folders checked with it
    planned = [sp.overrides(p) for p in sp.parts]
    # a trial run is a bench on this host: not for --plan, nor where the parts' guests run elsewhere (a Ray fleet)
    on_host = all(c.cfg.backend is not BackendName.ray for c in comps.values())
    sp = measured_plan(study, sp, trial and on_host, out)
    if [sp.overrides(p) for p in sp.parts] != planned:  # trimmed otherwise by what was measured
        comps = compose_parts(sp, study.overrides)
    require_fits(sp, study.settings.budget_s)
    parts = [CampaignPart(p.name, comps[p.name], {keys.EPISODE: str(p.episode)}, sp.part_estimates.get(p.name, 0.0),
                          f"episode {p.episode} {p.name}") for p in sp.parts]
    return sp, Campaign(RunKind.STUDY, "study", Path(study.settings.out_dir), parts, keys.STUDY_PART, whole_host=True,
                        deadline=started + study.settings.budget_s, export=True,
                        left_out=[str(s) for s in sp.skips])


def show_plan(out: Console, sp: StudyPlan, gpu_status: str) -> None:
    line = say(out)
    line(f"study: {gpu_status}; sizes {sp.tier}, {sp.repeats} repeat(s) per phase, estimate {sp.estimate_s:.0f} s")
    line("  seconds per phase run from: " + "; ".join(f"{w} {how}" for w, how in sp.sources.items()))
    for p in sp.parts:
        line(f"  run  episode {p.episode} {p.name}: {', '.join(p.labels)}")
    for s in sp.skips:
        line(f"  skip {s}")
