"""A sizing as a campaign: one part per consolidation to measure, each reused from the store where an earlier sizing
measured the same thing (looked for again once its cores are leased: two sizings of the same thing at once measure
it once); and what the pure plan (:mod:`suites.sizing.plan`) is fed from outside it before anything starts: a Ray
fleet surveyed, the candidate profiles read from configs/profile, a phase run's cost from this host's trial runs
(run where none are cached), each part composed (:func:`plan_parts`), as the study's campaign.py does for it."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path

from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites import store_keys as keys
from suites.backends.corelock import describe, held_by_others
from suites.backends.ray.cluster import survey as survey_fleet
from suites.campaign import (
    CACHE,
    OVERHEAD_S,
    TRIAL_SHARE,
    WORK_S,
    Campaign,
    CampaignPart,
    CampaignRun,
    Reuse,
    cached_trials,
    compose_part,
    time_trials,
)
from suites.capacity import budget
from suites.config import profile_files
from suites.config.compose import compose
from suites.config.profiles import ProfileConfig
from suites.config.schema import CONFIG_DIR, PER_NODE, BackendName, one_line
from suites.errors import BenchError, ConfigError
from suites.pipeline.orchestrate import say
from suites.run_kinds import RunKind
from suites.sizing import measured
from suites.sizing.plan import (
    REFERENCE_GPU,
    SizingPart,
    SizingPlan,
    part_overrides,
    phase_run_seconds,
    reuse_key,
    what_to_measure,
)
from suites.sizing.results import Key, reusable
from suites.sizing.settings import SizingSettings


def campaign_of(settings: SizingSettings, plan: SizingPlan, started: float = math.inf) -> Campaign:
    """The plan's consolidations, each a part leased on its own (a profile that does not fit is not measured, the
    others are) with its estimate, under a hard deadline: ``sizing.budget_s`` after ``started`` (time.monotonic()),
    so a consolidation that cannot end by it does not start, and the answer says it was not measured."""
    parts = [CampaignPart(p.label, p.comp, {keys.SIZING_KEY: p.key}, p.estimate_s, reuse=reuser(p, settings))
             for p in plan.parts]
    return Campaign(RunKind.SIZING, "size", Path(settings.out_dir), parts, keys.SIZING_PART, noun="consolidation",
                    deadline=started + settings.budget_s)


def reuser(part: SizingPart, settings: SizingSettings) -> Reuse:
    """A stored consolidation of the part's measurement, looked for in the store the sizing records into (before
    and after the part's lease: why one is measured again is said once)."""
    said: set[str] = set()

    def once(run: CampaignRun) -> Callable[[str], None]:
        def say(line: str) -> None:
            if line not in said:
                said.add(line)
                run.nest.recorder.say(line)
        return say

    def reuse(run: CampaignRun) -> tuple[str, str] | None:
        return reusable(run.reader, part, settings, once(run))
    return reuse


def measured_ids(plan: SizingPlan, run: CampaignRun) -> dict[Key, str]:
    """(profile, policy, CAD user type) -> its consolidation run, measured now or reused."""
    by_label = {p.label: (p.profile, p.policy, p.user_type) for p in plan.parts}
    return {by_label[name]: run_id for name, run_id in run.run_ids().items()}


def phase_seconds(settings: SizingSettings, inv: Inventory, tier: str,
                  device_work: dict[str, float] | None = None) -> tuple[dict[str, float], str]:
    """What one consolidation phase run costs on this host for each CAD user type ('' : the sizing's cad_size)
    (:func:`suites.sizing.plan.phase_run_seconds` of :func:`phase_work`), and where the figures came from."""
    work, source = phase_work(settings, inv, tier, device_work)
    return phase_run_seconds(settings, "gpu" if inv.gpus else "cpu", tier, work), source


def phase_work(settings: SizingSettings, inv: Inventory, tier: str,
               device_work: dict[str, float] | None = None) -> tuple[dict[str, float], str]:
    """The work seconds of one run of the CAD replay (every viewset) and of the ML guest at ``tier``, and where they
    came from: the study's trial runs on this host (their cache, less a run's set-up) where they timed both workloads
    at this tier, else the planner's table (campaign/costs.py). ``device_work``: a device file's work seconds per
    ``<workload>/<tier>`` (a rehearsal's ``stand_in=``): the device's, where this host's trial runs would time this
    host's set-up (on a loaded host, a phase three times the device's, and a plan refused for its budget)."""
    host, workloads = "gpu" if inv.gpus else "cpu", ("graphics-replay", "mnist-torch")
    if device_work is not None:
        return ({w: float(device_work.get(f"{w}/{tier}", WORK_S[(w, tier)][host])) for w in workloads},
                "the device file's work seconds (stand_in; the planner's table where it has none)")
    timed = cached_trials(trials_dir(settings), inv)
    if all(timed.get((w, tier)) for w in workloads):
        return ({w: max(0.0, timed[(w, tier)] - OVERHEAD_S[host]) for w in workloads},
                f"timed by trial runs on this host ({CACHE} under {trials_dir(settings)})")
    return ({w: float(WORK_S[(w, tier)][host]) for w in workloads},
            f"the planner's table (campaign/costs.py) for a {host.upper()} host (not measured here)")


def trials_dir(settings: SizingSettings) -> Path:
    """Where a sizing's trial runs are cached: the study's folder beside the sizing's (outputs/study by default),
    so a sizing and a study on one host plan from the same trial runs."""
    return Path(settings.out_dir).parent / "study"


def time_phases(settings: SizingSettings, inv: Inventory, overrides: list[str], tier: str, out: Console) -> None:
    """A GPU host's trial runs (the study's: one bench run of each workload at ``tier``, cached under this host's
    fingerprint in the study's folder) where none are cached yet, each stopped after its share of sizing.budget_s: a
    GPU phase's seconds are this host's, never the CPU table's guess (48 phase runs x 11 s planned for an H200's MIG
    slices once). None beside another benchmark run, as the study's: a trial run there would time that run's load
    (and queue for its cores); the plan is then made from what is cached, said."""
    held = held_by_others(sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [])
    if held:
        say(out)(f"size: no trial runs (another benchmark run holds {describe(held)}): planned from what is cached")
        return
    time_trials(["graphics-replay", "mnist-torch"], tier, overrides, trials_dir(settings), inv,
                     lambda line: say(out)(f"size: {line}"),
                     settings.budget_s * TRIAL_SHARE)


def survey(overrides: list[str]) -> tuple[list[JsonObject], dict[str, list[str]]]:
    """(what each node of the fleet says it is, ray.gpu_groups), where the consolidations run one guest per node
    (backend=ray ray.placement=per-node); ([], {}) where they run on this host."""
    try:  # the command line alone (its phases are composed with the parts): bad input is one error here
        cfg, _ = compose(["scenario=consolidation", *overrides])
    except (BenchError, HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(one_line(exc)) from exc
    if cfg.backend is not BackendName.ray or cfg.ray.placement != PER_NODE:
        return [], {}
    return survey_fleet(cfg.ray), {k: list(v) for k, v in cfg.ray.gpu_groups.items()}


def fleet_gpu(reports: list[JsonObject]) -> str:
    """The physical GPU a fleet's vGPUs slice (GRID M60-4Q: Tesla M60), or its GPU's own name."""
    names = list(dict.fromkeys(str(g.get("name")) for r in reports for g in r.get("gpus") or []))  # each once
    models = sorted({c.gpu_model for n in names for c in profile_files.candidate_profiles(n, []) if c.gpu_model})
    return models[0] if models else (names[0] if names else "")


def check_names(settings: SizingSettings) -> None:
    """``sizing.profiles`` and ``sizing.consolidation_profile`` name profiles of configs/profile, each named."""
    known = {p.stem for p in (CONFIG_DIR / "profile").glob("*.yaml")}
    unknown = [p for p in settings.profiles if p not in known]
    if unknown:
        raise ConfigError(f"sizing.profiles: no such profile {', '.join(unknown)} in configs/profile")
    if settings.consolidation_profile not in known:
        raise ConfigError(f"sizing.consolidation_profile={settings.consolidation_profile}: no such profile in "
                          "configs/profile (it is refused, not replaced)")


def candidates_of(settings: SizingSettings, inv: Inventory, fleet: list[JsonObject],
                  notes: list[str]) -> tuple[str, list[ProfileConfig]]:
    """(the GPU sized for, its candidate profiles that this host's card can hold)."""
    check_names(settings)
    gpu = settings.gpu or fleet_gpu(fleet) or (str(inv.gpus[0].get("name")) if inv.gpus else REFERENCE_GPU)
    candidates = profile_files.candidate_profiles(gpu, settings.profiles)
    if not candidates:
        raise ConfigError(f"sizing.gpu={gpu}: no vGPU profile of it in configs/profile (sizing.profiles names "
                          "candidates by hand)")
    return gpu, candidates if fleet else measured.within_card(candidates, inv, notes)


def compose_parts(settings: SizingSettings, inv: Inventory, overrides: list[str], fitted: budget.Fitted,
                  tier: str, context: tuple[list[ProfileConfig], list[JsonObject]]) -> list[SizingPart]:
    candidates, fleet = context
    by_name = {c.name: c for c in candidates}
    several = len(settings.cad_users) > 1
    parts = []
    for sweep in fitted.sweeps:
        command_line = [*part_overrides(settings, sweep, fitted.repeats, tier, by_name[sweep.profile]), *overrides]
        label = f"{sweep.profile}/{sweep.policy}" + (f"/{sweep.user_type}" if several else "")
        comp = compose_part(command_line, f"sizing part {label}")
        parts.append(SizingPart(sweep.profile, sweep.policy, comp,
                          reuse_key(inv, command_line, sweep.profile, sweep.policy, fleet), sweep.user_type, label))
    return parts


def plan_parts(settings: SizingSettings, inv: Inventory, overrides: list[str], out: Console,
               trial: bool = False, device_work: dict[str, float] | None = None) -> SizingPlan:
    """The GPU sized for, its candidates, the consolidations to measure or reuse (fitted to what is left of
    sizing.budget_s), notes: every part composed before anything starts; a problem is one ConfigError. ``trial``: on a
    GPU host, a phase's cost from trial runs there (:func:`time_phases`), not a CPU host's table; ``device_work``: a
    stand-in device's work seconds, in their place (:func:`phase_seconds`)."""
    t0 = time.monotonic()
    fleet, groups = survey(overrides)
    notes: list[str] = []
    gpu, candidates = candidates_of(settings, inv, fleet, notes)
    if settings.users:
        notes.append("CAD users by type (sizing.users): " + ", ".join(f"{k} {v}" for k, v in
                     settings.cad_users.items()) + f"; sizing.mix.cad={settings.mix.get('cad', 0)} is not used")
    tier = settings.tier if settings.tier != "auto" else "full"  # smoke sizes are no measurement (noise.py)
    counts, provenance = what_to_measure(settings, inv, candidates, fleet, groups, notes)
    policies = list(settings.policies)
    if "mps" in policies and (fleet or not inv.gpus):
        policies.remove("mps")
        notes.append("policy mps: skipped on a fleet: each guest is a VM of its own, whose GPU time the hypervisor's "
                     "vGPU scheduler shares (provenance says what NVML showed of it)" if fleet else
                     "policy mps: skipped: no GPU (MPS partitions a GPU's SMs; never faked on the CPU)")
    if trial and inv.gpus and not fleet and device_work is None:
        time_phases(settings, inv, overrides, tier, out)
    phase_s, source = phase_seconds(settings, inv, tier, device_work)
    shared = budget.cpu_share(inv.cpus_usable) if not inv.gpus and not fleet else (lambda k: 1.0)
    spent = time.monotonic() - t0  # the trial runs' seconds are the sizing's too: its deadline counts them
    fitted = budget.fit(budget.sweeps_of(settings.counts, counts, policies, list(settings.cad_users)),
                        settings.repeats, settings.budget_s - spent, phase_s, shared)
    phase_costs = ", ".join(f"{t} {s:.0f} s" for t, s in phase_s.items() if t)  # '' is cad_size's, said under its name
    if not fitted.fits:
        smallest = fitted.sweeps[0]
        raise ConfigError(f"sizing.budget_s={settings.budget_s:g}: the smallest sizing ({smallest.profile} "
                          f"{smallest.policy}, count {list(smallest.counts)}, {fitted.repeats} repeats) takes about "
                          f"{fitted.estimate_s:.0f} s by its estimate (a phase run: {phase_costs}; {source}); give "
                          f"sizing.budget_s >= {math.ceil(fitted.estimate_s)}")
    notes += [f"trimmed to sizing.budget_s={settings.budget_s:g}: {t}" for t in fitted.trims]
    parts = compose_parts(settings, inv, overrides, fitted, tier, (candidates, fleet))
    parts = [p._replace(estimate_s=budget.sweep_s(sw, fitted.repeats, phase_s, shared))
             for p, sw in zip(parts, fitted.sweeps, strict=True)]
    say(out)(f"size: {gpu}: {len(candidates)} candidate profile(s), {len(parts)} consolidation(s) "
             f"({', '.join(p.label for p in parts)}), sizes {tier}, {fitted.repeats} repeat(s) "
             "per count" + (f", on a fleet of {len(fleet)} node(s)" if fleet else ""))
    say(out)(f"size: estimate {fitted.estimate_s:.0f} s of sizing.budget_s={settings.budget_s:g} "
             f"(a phase run: {phase_costs}; {source})")
    for t in fitted.trims:
        say(out)(f"size: trimmed: {t}")
    return SizingPlan(gpu, candidates, parts, notes, fleet, provenance, fitted)
