"""``make size`` (``python -m suites size [sizing=<name>] [sizing.key=value ...] [bench overrides ...]``): which
profile, how many guests per GPU, how many GPUs and hosts, at what cost per user, for a mix of CAD users and ML
jobs, each figure with the range its confidence gives.

For each candidate profile of the GPU (configs/profile; on a host without a GPU, ``sizing.consolidation_profile``
alone, said) a consolidation sweep is measured, or reused from the store where an earlier sizing measured the same
thing (same GPU, driver, profile, policy and command line, the folders it writes to aside): ML alone, one CAD guest
alone, then 1, 2, ... CAD guests beside the ML guest, ``sizing.repeats`` times each in a row. Each curve is read for
``N_safe`` / ``N_point`` / knee (suites/capacity/curve.py), the mix solved (solver.py), and one MLflow run records
it (params: the mix and the limits; metrics: the answer), its consolidations nested under it, with the report
(``<sizing.out_dir>/<time>/sizing.{md,html,png}``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console

from gpu_probe import inventory
from gpu_probe.datasheet import memory_MiB
from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites.backends.ray.cluster import survey as survey_fleet
from suites.capacity import budget, curve, fleet_candidates, measured, solver
from suites.capacity.budget import Sweep
from suites.capacity.result import SizingResult, title_label
from suites.capacity.size_settings import SizingSettings, describe, load_settings, split_args
from suites.config.compose import Composition, compose_run
from suites.config.profiles import ProfileConfig
from suites.config.schema import PER_NODE, BackendKind, one_line, register_configs, run_stamp
from suites.errors import BenchError, ConfigError
from suites.pipeline.jobs import fail
from suites.pipeline.orchestrate import console, plan_comparison, run_comparison, say
from suites.pipeline.prechecks import check_out_dirs, refuse_run_dirs, require_parseable
from suites.record import mlflow_runs
from suites.record.outdirs import require_output_dir
from suites.record.reader import phase_numbers
from suites.record.recorder import Recorder, RunRef
from suites.render import sizing_report
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.plan import plan_and_lease
from suites.run.shield import stop_on_signals
from suites.study import calibration
from suites.study.planner import OVERHEAD_S, WORK_S
from suites.study.settings import StudySettings
from suites.validity import weakest

KIND = "sizing"
REFERENCE_GPU = "Tesla M60"  # the reference study's, where neither sizing.gpu nor this host names one


def part_overrides(settings: SizingSettings, sweep: Sweep, repeats: int, tier: str, p: ProfileConfig) -> list[str]:
    """One consolidation's command line: the profile, its CAD size's viewsets, the steps, the repeats, the policy."""
    viewsets = ",".join(settings.cad_sizes[settings.cad_size])
    steps = list(sweep.steps)
    out = ["scenario=consolidation", f"profile={sweep.profile}", f"scenario.repeats={repeats}",
           f"scenario.study.max_guests={steps[-1]}", "scenario.study.cad_alone=true",
           "scenario.study.steps_past_miss=2", "scenario.study.cad.overrides=['workload.size=small',"
           f"'workload.viewsets=[{viewsets}]']"]
    if steps != list(range(1, steps[-1] + 1)):
        out.append(f"scenario.study.steps=[{','.join(map(str, steps))}]")
    if tier == "smoke":
        out.insert(0, "+preset=smoke")
    if sweep.policy == "mps":  # each guest's SM share: its profile's slice of the GPU (the stand-in for fixed share)
        out += ["sharing=mps", f"profile.mps_share_pct={max(1, 100 // max(1, p.max_per_gpu))}"]
    return out


def phase_seconds(inv: Inventory, tier: str) -> tuple[float, str]:
    """What one consolidation phase run costs on this host, and where the figure came from: the study's probe of
    this host (its calibration cache) where it timed both workloads at this tier, else the study planner's table."""
    host = "gpu" if inv.gpus else "cpu"
    probed = calibration.cached(Path(StudySettings().out_dir), inv)
    runs = [probed.get((w, tier)) for w in ("graphics-replay", "mnist-torch")]
    if all(runs):
        return max(runs), f"probed on this host ({calibration.CACHE} under {StudySettings().out_dir})"  # type: ignore[type-var]
    work = max(WORK_S[(w, tier)][host] for w in ("graphics-replay", "mnist-torch"))
    return OVERHEAD_S[host] + work, f"the study planner's table for a {host.upper()} host (not measured here)"


# Where a run writes and what it prints: no part of what a consolidation measures, so not part of its reuse key
WHERE_KEYS = ("tracking_uri", "fallback_tracking_uri", "artifact_dir", "data.cache_dir", "progress", "experiment",
              "wait_for_cores_s")


class Part(NamedTuple):
    profile: str
    policy: str
    comp: Composition
    key: str  # what makes a stored consolidation this part's measurement (bench.sizing_key)


class Plan(NamedTuple):
    gpu: str  # the GPU sized for
    candidates: list[ProfileConfig]
    parts: list[Part]
    notes: list[str]
    fleet: list[JsonObject]  # what each node of a fleet (ray.placement=per-node) said it is; [] on this host
    provenance: dict[str, str]  # what the fleet's nodes add to the sizing's provenance
    fitted: budget.Fitted  # what fits sizing.budget_s: the sweeps, repeats, estimate and trims


def reuse_key(inv: Inventory, command_line: list[str], profile: str, policy: str, fleet: list[JsonObject]) -> str:
    """GPU, driver, profile, policy and the consolidation's whole command line (the user's bench overrides too),
    less the keys that only say where it writes or what it prints; on a fleet its nodes' GPUs and drivers."""
    measured = [a for a in command_line if a.partition("=")[0].lstrip("+~") not in WHERE_KEYS]
    gpus = [g for r in fleet for g in r.get("gpus") or []] if fleet else inv.gpus
    drivers = sorted({str(r.get("driver")) for r in fleet}) if fleet else [inv.driver_version or "-"]
    return json.dumps({"gpu": ", ".join(str(g.get("name")) for g in gpus) or "no GPU", "driver": ", ".join(drivers),
                       "profile": profile, "policy": policy, "overrides": measured}, sort_keys=True)


def stored(client: Any, experiment: str, key: str) -> str | None:
    """The newest finished consolidation recorded with ``key`` (bench.sizing_key), or None."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return None
    runs = client.search_runs([exp.experiment_id], "tags.`bench.kind` = 'consolidation' and "
                              "attributes.status = 'FINISHED'", max_results=200,
                              order_by=["attributes.start_time DESC"])
    return next((r.info.run_id for r in runs if r.data.tags.get("bench.sizing_key") == key), None)


def survey(overrides: list[str]) -> tuple[list[JsonObject], dict[str, list[str]]]:
    """(what each node of the fleet says it is, ray.gpu_groups), where the consolidations run one guest per node
    (backend=ray ray.placement=per-node); ([], {}) where they run on this host."""
    cfg = compose_run(["scenario=consolidation", *overrides]).cfg
    if cfg.backend is not BackendKind.ray or cfg.ray.placement != PER_NODE:
        return [], {}
    return survey_fleet(cfg.ray), {k: list(v) for k, v in cfg.ray.gpu_groups.items()}


def fleet_gpu(reports: list[JsonObject]) -> str:
    """The physical GPU a fleet's vGPUs slice (GRID M60-4Q: Tesla M60), or its GPU's own name."""
    names = list(dict.fromkeys(str(g.get("name")) for r in reports for g in r.get("gpus") or []))  # each once
    models = sorted({c.gpu_model for n in names for c in measured.candidate_profiles(n, []) if c.gpu_model})
    return models[0] if models else (names[0] if names else "")


def what_to_measure(settings: SizingSettings, inv: Inventory, candidates: list[ProfileConfig], fleet: list[JsonObject],
                    groups: dict[str, list[str]], notes: list[str]) -> tuple[dict[str, int], dict[str, str]]:
    """(profile -> its deepest step, the fleet's provenance): every candidate on a GPU host, what the fleet's nodes
    can place on a fleet, the one ``sizing.consolidation_profile`` without a GPU."""
    deepest = settings.steps[-1] if settings.steps else settings.max_guests
    if fleet:
        on_fleet = fleet_candidates.plan(candidates, fleet, groups, deepest)
        notes += on_fleet.notes
        if not on_fleet.steps:
            raise ConfigError("size: no candidate profile can be measured on this fleet: " + "; ".join(notes))
        return on_fleet.steps, on_fleet.provenance
    if inv.gpus:
        return {c.name: deepest for c in candidates}, {}
    names = [c.name for c in candidates]
    chosen = settings.consolidation_profile if settings.consolidation_profile in names else names[0]
    notes.append(f"no GPU: only {chosen} measured (on the CPU no profile is enforced: one curve stands for "
                 f"none of them); the others' GPU time is not measured")
    return {chosen: deepest}, {}


def plan_parts(settings: SizingSettings, inv: Inventory, overrides: list[str], out: Console) -> Plan:
    """The GPU sized for, its candidates, the consolidations to measure or reuse (fitted to sizing.budget_s), notes:
    every part composed before anything starts; a problem is one ConfigError."""
    fleet, groups = survey(overrides)
    gpu = settings.gpu or fleet_gpu(fleet) or (str(inv.gpus[0].get("name")) if inv.gpus else REFERENCE_GPU)
    notes: list[str] = []
    candidates = measured.candidate_profiles(gpu, settings.profiles)
    if not candidates:
        raise ConfigError(f"sizing.gpu={gpu}: no vGPU profile of it in configs/profile (sizing.profiles names "
                          "candidates by hand)")
    if not fleet:
        candidates = measured.within_card(candidates, inv, notes)
    tier = settings.tier if settings.tier != "auto" else ("full" if inv.gpus or fleet else "smoke")
    steps, provenance = what_to_measure(settings, inv, candidates, fleet, groups, notes)
    policies = list(settings.policies)
    if "mps" in policies and (fleet or not inv.gpus):
        policies.remove("mps")
        notes.append("policy mps: skipped on a fleet: each guest is a VM of its own, whose GPU time the hypervisor's "
                     "vGPU scheduler shares (provenance says what NVML showed of it)" if fleet else
                     "policy mps: skipped: no GPU (MPS partitions a GPU's SMs; never faked on the CPU)")
    phase_s, source = phase_seconds(inv, tier)
    shared = budget.cpu_share(inv.cpus_usable) if not inv.gpus and not fleet else (lambda k: 1.0)
    fitted = budget.fit(budget.sweeps_of(settings.steps, steps, policies), settings.repeats, settings.budget_s,
                        phase_s, shared)
    notes += [f"trimmed to sizing.budget_s={settings.budget_s:g}: {t}" for t in fitted.trims]
    by_name = {c.name: c for c in candidates}
    parts = []
    for sweep in fitted.sweeps:
        command_line = [*part_overrides(settings, sweep, fitted.repeats, tier, by_name[sweep.profile]), *overrides]
        try:
            comp = compose_run(command_line)
        except (BenchError, HydraException, OmegaConfBaseException, ValueError) as exc:
            raise ConfigError(f"sizing part {sweep.profile}/{sweep.policy}: {one_line(exc)}") from exc
        check_out_dirs(comp.cfg)
        parts.append(Part(sweep.profile, sweep.policy, comp,
                          reuse_key(inv, command_line, sweep.profile, sweep.policy, fleet)))
    say(out)(f"size: {gpu}: {len(candidates)} candidate profile(s), {len(parts)} consolidation(s) "
             f"({', '.join(f'{p.profile}/{p.policy}' for p in parts)}), sizes {tier}, {fitted.repeats} repeat(s) "
             "per step" + (f", on a fleet of {len(fleet)} node(s)" if fleet else ""))
    say(out)(f"size: estimate {fitted.estimate_s:.0f} s of sizing.budget_s={settings.budget_s:g} "
             f"({phase_s:.0f} s a phase run: {source})")
    for t in fitted.trims:
        say(out)(f"size: trimmed: {t}")
    return Plan(gpu, candidates, parts, notes, fleet, provenance, fitted)


def measure(parts: list[Part], settings: SizingSettings, run_dir: Path, recorder: Recorder, ref: RunRef | None,
            out: Console, notes: list[str]) -> dict[tuple[str, str], str]:
    """Each part's consolidation run id: reused from the store, or measured now (nested under the sizing run)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(recorder.tracker.uri) if recorder.tracker else None
    ids: dict[tuple[str, str], str] = {}
    for i, (name, policy, comp, key) in enumerate(parts, 1):
        found = stored(client, comp.cfg.experiment, key) if client is not None and settings.reuse else None
        if found:
            say(out)(f"== size part {i}/{len(parts)}: {name}/{policy}: reused consolidation run {found} ==")
            ids[(name, policy)] = found
            continue
        say(out)(f"== size part {i}/{len(parts)}: {name}/{policy}: measuring ==")
        try:
            planned, cores = plan_and_lease(lambda c=comp: plan_comparison(c, out), lambda c: c.plans, run_dir,
                                            comp.cfg.wait_for_cores_s, say(out))
        except BenchError as exc:  # this profile does not fit here: the others are still sized
            notes.append(f"{name}/{policy}: not measured: {one_line(exc)}")
            say(out)(f"size: {notes[-1]}")
            continue
        with cores:
            code = run_comparison(comp, run_dir / f"{name}-{policy}", out, "size", planned, recorder, ref,
                                  {"bench.sizing_key": key, "bench.sizing_part": f"{name}/{policy}"})
        if client is not None and ref is not None:
            found = child_of(client, ref.run_id, f"{name}/{policy}")
            if found:
                ids[(name, policy)] = found
        if code == EXIT_INTERRUPTED:  # what was measured is still read and recorded; the rest is said
            notes.append(f"interrupted during {name}/{policy} (its steps so far are read); not measured: "
                         + (", ".join(f"{p.profile}/{p.policy}" for p in parts[i:]) or "nothing else"))
            break
    return ids


def child_of(client: Any, parent: str, part: str) -> str | None:
    exp = client.get_run(parent).info.experiment_id
    runs = client.search_runs([exp], f"tags.mlflow.parentRunId = '{parent}' and tags.`bench.sizing_part` = '{part}'")
    return runs[0].info.run_id if runs else None


def read_curves(settings: SizingSettings, client: Any, ids: dict[tuple[str, str], str]) -> tuple[
        dict[str, curve.Capacity], dict[str, str], list[dict], dict[str, dict[str, float]]]:
    """(each profile's capacity under the first policy, its validity, its phases, every policy's n_point)."""
    limits = [curve.Limit(k, v) for k, v in settings.limits.items()]
    caps, validity, phases_all, policies = {}, {}, [], {}
    for (name, policy), run_id in ids.items():
        phases = phase_numbers(client, run_id)
        cap = curve.capacity(measured.steps_of(phases), limits)
        tags = client.get_run(run_id).data.tags
        worth = weakest([v for k, v in tags.items() if k.startswith("bench.validity.")])
        policies.setdefault(policy, {})[f"{name}.n_point"] = float(cap.n_point)
        if policy == settings.policies[0] or (name, settings.policies[0]) not in ids:
            caps[name], validity[name] = cap, worth
            phases_all.append(phases)
    return caps, validity, phases_all, policies


def provenance_of(inv: Inventory, plan: Plan, ids: dict[tuple[str, str], str]) -> dict[str, str]:
    """GPU, driver, mode, policy, clocks, host, the runs drawn on; a fleet's nodes say their own GPU and mode."""
    return {"GPU": ", ".join(str(g.get("name")) for g in inv.gpus) or "no GPU", "sized for": plan.gpu,
            "driver": inv.driver_version or "-", "mode": "vGPU profiles (" + (
                "emulated on this host's GPU" if inv.gpus else "not enforced: no GPU") + ")",
            "scheduler policy": ", ".join(sorted({p for _, p in ids})), "host": f"{inv.hostname} "
            f"({inv.cpu_model}, {inv.cpus_usable} cores)", "runs": ", ".join(ids.values()) or "none",
            "clocks": "as the driver set them (never changed by the suite)", **plan.provenance}


def solve(settings: SizingSettings, inv: Inventory, plan: Plan, ids: dict[tuple[str, str], str],
          uri: str) -> SizingResult:
    """The curves read back from the store (never from memory), the mix solved."""
    from mlflow.tracking import MlflowClient

    notes = plan.notes
    caps, validity, phases_all, policies = read_curves(settings, MlflowClient(uri), ids)
    cad_peak, ml_peak = measured.demand(phases_all)
    if plan.fleet and fleet_candidates.replayed(plan.fleet):  # the recording's memory, not the workload's
        cad_peak = ml_peak = math.nan
        notes.append("peak GPU memory not measured (the fleet's NVML is a recording): no profile is excluded by "
                     "its framebuffer")
    elif cad_peak != cad_peak:
        notes.append("peak GPU memory not measured (no GPU): no profile is excluded by its framebuffer")
    # the host measured is the host sized for where it has the GPU; a host without one (or a fleet's runner)
    # describes no GPU server
    here = bool(inv.gpus) and not plan.fleet
    host = solver.Host(settings.gpus_per_host, settings.host.cores or (inv.cpus_usable if here else None),
                       settings.host.memory_MiB or (int(host_memory_MiB()) if here else None),
                       settings.host.cpu_overcommit)
    if host.cores is None or host.memory_MiB is None:
        notes.append("host CPU and memory: not limits (" + ("the fleet's hosts are not described" if plan.fleet
                     else "no GPU here") + ", and sizing.host.cores / memory_MiB not given)")
    cands = [solver.Candidate(c.name, plan.gpu, c.framebuffer_MiB or memory_MiB(c.gpu_model) or 0, c.max_per_gpu,
                              c.vcpus, c.memory_MiB, caps.get(c.name), validity.get(c.name, "not measured"))
             for c in plan.candidates]
    mix = solver.Mix(int(settings.mix.get("cad", 0)), int(settings.mix.get("ml", 0)))
    answer = solver.solve(cands, mix, solver.Demand(cad_peak, ml_peak, settings.reserve_MiB), host, settings.spare,
                          solver.Prices(settings.price.gpu, settings.price.licence_per_year, settings.years))
    return SizingResult(mix, plan.gpu, settings.limits, caps, answer, validity, provenance_of(inv, plan, ids), notes,
                        policies if len(policies) > 1 else {})


def host_memory_MiB() -> float:
    import psutil

    return psutil.virtual_memory().total / 2**20


def record(recorder: Recorder, ref: RunRef | None, settings: SizingSettings, result: SizingResult, run_dir: Path,
           files: list[Path]) -> None:
    rec = result.answer.recommended
    metrics: dict[str, float] = {}
    for s in result.answer.sized:
        metrics.update(sizing_report.sized_metrics(s))
    for profile, cap in result.capacities.items():
        metrics.update({f"{profile}.n_point": float(cap.n_point), f"{profile}.n_safe": float(cap.n_safe)})
        if cap.knee is not None:
            metrics[f"{profile}.knee"] = float(cap.knee)
        for end, n in zip(("n_point", "n_safe"), cap.predicted, strict=True):
            if n is not None:  # interpolated between two measured steps: its own key, never the measured one's
                metrics[f"{profile}.{end}.predicted"] = float(n)
    if rec is not None:
        metrics.update({f"answer.{k}": v for k, v in sizing_report.sized_metrics(rec).items()})
    params = {**describe(settings), "recommended": rec.profile if rec else "none",
              "validity": result.weakest, **{f"provenance.{k}": v for k, v in result.provenance.items()}}
    tags = {"bench.title": title_label(result), "bench.answer": " ".join(sizing_report.recommendation(result)[:1])}
    recorder.comparison_results(ref, mlflow_runs.ComparisonResults(params, metrics, tags), run_dir)
    recorder.finish(ref, files, "FINISHED")


def prepare(argv: list[str], out: Console) -> tuple[SizingSettings, Inventory, Plan]:
    """Everything checked and composed before anything starts or is written; a problem ends it in one line."""
    register_configs()
    name, mine, overrides = split_args(argv)
    try:
        require_parseable(overrides)
        refuse_run_dirs(overrides, "sizing", "sizing.out_dir", "outputs/sizing")
        settings = load_settings(name, mine)
        require_output_dir(settings.out_dir, "sizing.out_dir")
        inv = inventory.collect()
        return settings, inv, plan_parts(settings, inv, overrides, out)
    except (BenchError, HydraException, OmegaConfBaseException) as exc:
        fail(one_line(exc))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    out, t0 = console(), time.monotonic()
    settings, inv, plan = prepare(argv, out)
    stop_on_signals()
    run_dir = Path(settings.out_dir) / run_stamp()
    run_dir.mkdir(parents=True)
    recorder = Recorder(plan.parts[0].comp.cfg, say(out))
    ref = recorder.start_comparison(f"sizing-{run_dir.name}", {"bench.role": KIND, "bench.kind": KIND})
    ids = measure(plan.parts, settings, run_dir, recorder, ref, out, plan.notes)
    if recorder.tracker is None:
        fail("size: no store to read the curves back from (tracking_uri and its fallback both failed)")
    result = solve(settings, inv, plan, ids, recorder.tracker.uri)
    files = sizing_report.write(result, run_dir)
    for item in sizing_report.console_tables(result):
        out.print(item) if not isinstance(item, str) else say(out)(item)
    record(recorder, ref, settings, result, run_dir, files)
    say(out)(f"size: {run_dir / 'sizing.html'} ({time.monotonic() - t0:.0f} s)")
    return 0  # a mix no measured profile serves is an answer (said, and recorded: recommended=none), not a fault


if __name__ == "__main__":
    sys.exit(main())
