"""``make study`` (``python -m suites study [study.key=value ...] [bench overrides ...]``): the reference
study reproduced in one command.

Episode 1 (GPU vs no GPU, scaling over 1..min(4, GPUs), passthrough vs vGPU,
one 4-GPU guest vs four 1-GPU guests) and episode 2 (CAD + ML sharing a GPU
over the M60 Q profiles, emulated on whatever NVIDIA GPU is present, and a
consolidation sweep) run as comparisons nested under one MLflow study run;
then one report, ``outputs/study/<time>/report.{md,html}`` + PNGs, puts the
study's figure for every row beside this host's and lists what was skipped and
why. The study's runs are also exported to files beside the report
(``mlflow-export/``), so a GPU host without network sends back one tarball:
``python -m suites sync --run-dir <study dir>`` imports it.

``--plan`` prints the plan (parts, sizes, repeats, estimate, skips) and
starts nothing. Every other argument is a bench override given to every part
(``data.root=...``, ``tracking_uri=...``, ``profile.vcpus=4``).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console

from gpu_probe import inventory
from gpu_probe.inventory import Inventory
from suites import store_keys as keys
from suites.backends.corelock import CoreLease, CoresHeld, describe, held_by_others
from suites.backends.ray.cluster import cluster_gpus
from suites.config.compose import Composition, compose_run
from suites.config.schema import BackendKind, one_line, register_configs, run_stamp
from suites.errors import BenchError, ConfigError, PlacementError
from suites.pipeline.jobs import fail
from suites.pipeline.orchestrate import PlannedComparison, best_effort, console, plan_comparison, run_comparison, say
from suites.pipeline.prechecks import check_out_dirs, refuse_run_dirs, require_parseable
from suites.record import mlflow_runs
from suites.record.export import export_tree
from suites.record.outdirs import require_output_dir
from suites.record.recorder import Recorder, RunRef
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.plan import plan_and_lease
from suites.run.shield import interrupt_reason, stop_on_signals
from suites.study import calibration, results
from suites.study import writeup as study_report
from suites.study.planner import PLAN_SHARE, Measured, Part, Skip, StudyPlan, plan_study, workloads_of
from suites.study.settings import StudySettings, load_settings, load_timings, split_args
from suites.workloads import workload_class


def missing_components() -> dict[str, str]:
    """Optional parts of the suite this Python lacks (what their workloads require), each with its skip line."""
    out = {}
    for component, workload, loss in (("tensorflow", "mnist-tf", "Keras rows skipped"),
                                      ("moderngl", "graphics-replay", "CAD guests cannot render")):
        lacking = workload_class(workload).missing()
        if lacking:
            out[component] = f"{', '.join(lacking)} not installed: {loss}"
    return out


def compose_parts(sp: StudyPlan, overrides: list[str]) -> dict[str, Composition]:
    """Every part composed before anything starts; a part that does not compose is one ConfigError naming it."""
    comps = {}
    for part in sp.parts:
        try:
            comp = compose_run([*sp.overrides(part), *overrides])
        except (BenchError, HydraException, OmegaConfBaseException, ValueError) as exc:
            raise ConfigError(f"study part {part.name}: {one_line(exc)}") from exc
        if part.episode == 1:  # the phases this host can run (the planner dropped the others, saying why)
            comp.runs = [r for r in comp.runs if r.label in part.labels]
        comps[part.name] = comp
    return comps


Ready = list[tuple[Part, PlannedComparison]]


def host_to_itself() -> list[int]:
    """A study compares runs, so it has the host to itself: this process's cores, none held by another benchmark run
    (a bench, another study), else CoresHeld naming the holders, which the caller waits out (wait_for_cores_s) or
    refuses with. It then leases every core for its whole length: a bench or study started beside it queues or is
    refused in turn, and no other run's load enters its comparisons."""
    cores = sorted(os.sched_getaffinity(0))
    held = held_by_others(cores)
    if held:
        raise CoresHeld(f"a study compares runs on a host it has to itself; another benchmark run holds "
                        f"{describe(held)}; run it when that ends (or wait_for_cores_s=<seconds>)",
                        describe(held, short=True))
    return cores


def prepare(sp: StudyPlan, comps: dict[str, Composition], out: Console) -> tuple[Ready, list[Skip]]:
    """Every part placed and given its data before the first starts, on a host the study has to itself; a part
    this host cannot place is skipped (one that only waits for cores another benchmark run holds is not:
    CoresHeld, which the caller waits out)."""
    host_to_itself()
    ready, skips = [], []
    for part in sp.parts:
        try:
            ready.append((part, plan_comparison(comps[part.name], out)))
        except CoresHeld:
            raise
        except PlacementError as exc:
            skips.append(Skip(part.name, f"does not fit this host: {exc}"))
    return ready, skips


def measured_plan(sp: StudyPlan, replan: Callable[[Measured], StudyPlan], known: Measured, settings: StudySettings,
                  inv: Inventory, overrides: list[str], probe: bool, out: Console) -> StudyPlan:
    """The plan again (``replan``) with this host's probe of the workloads ``sp`` runs added to what was ``known``
    (``probe``: measure what the cache lacks, else the cache alone); ``sp`` itself where nothing was measured or
    study.calibrate=false."""
    if not settings.calibrate:
        return sp
    where = Path(settings.out_dir)
    held = held_by_others(sorted(os.sched_getaffinity(0)))
    if probe and held:  # a probe beside another run would time that run's load (and queue for its cores)
        say(out)(f"study: not probed (another benchmark run holds {describe(held)}): planned from what is cached")
    t0 = time.monotonic()
    probed = calibration.probe(workloads_of(sp.parts), sp.tier, overrides, where, inv, say(out),
                               settings.budget_s * calibration.PROBE_SHARE) \
        if probe and not held else calibration.cached(where, inv)
    if not probed:
        return sp
    return replan(replace(known, probed=probed, spent_s=time.monotonic() - t0))


def lease(sp: StudyPlan, comps: dict[str, Composition], out_dir: Path, out: Console) -> tuple[
        tuple[Ready, list[Skip]], CoreLease]:
    """Every part placed, and the cores leased (waiting for another run's, as wait_for_cores_s allows: a wait that
    is no part of the study's budget, so its deadline moves by it)."""
    wait_s = next(iter(comps.values())).cfg.wait_for_cores_s if comps else 0.0
    queued = time.monotonic()
    made, cores = plan_and_lease(lambda: prepare(sp, comps, out),
                                 lambda made: [p for _, planned in made[0] for p in planned.plans], out_dir, wait_s,
                                 say(out))
    sp.deadline += time.monotonic() - queued
    return made, cores


def show_plan(out: Console, sp: StudyPlan, gpu_status: str) -> None:
    line = say(out)
    line(f"study: {gpu_status}; sizes {sp.tier}, {sp.repeats} repeat(s) per phase, estimate {sp.estimate_s:.0f} s")
    line("  seconds per phase run from: " + "; ".join(f"{w} {how}" for w, how in sp.sources.items()))
    for p in sp.parts:
        line(f"  run  episode {p.episode} {p.name}: {', '.join(p.labels)}")
    for s in sp.skips:
        line(f"  skip {s}")


def gpus_to_plan_with(inv: Inventory, overrides: list[str]) -> tuple[int, str]:
    """This host's GPUs, or with ``backend=ray`` the cluster's (a fleet of VMs: each part then placed by its nodes'
    own GPUs, and skipped with the cluster's offer where they are not there)."""
    cfg = compose_run(overrides).cfg
    if cfg.backend is BackendKind.ray:
        return cluster_gpus(cfg.ray)
    return len(inv.gpus), inv.gpu_status


def study_dir(root: Path) -> Path:
    """A new ``<root>/<run stamp>`` (time, milliseconds and pid, like a run directory: never another study's)."""
    path = root / run_stamp()
    path.mkdir(parents=True)
    return path


def run_parts(ready: list[tuple[Part, PlannedComparison]], sp: StudyPlan, run_dir: Path,
              recorder: Recorder, ref: RunRef | None, out: Console) -> int:
    """Each part in turn, nested under the study run; stops at an interrupt (the rest is listed as skipped)."""
    worst, t0 = 0, time.monotonic()
    for i, (part, planned) in enumerate(ready, 1):
        late = sp.fits(part.name, time.monotonic())
        if late:
            sp.skips.append(Skip(part.name, late))
            say(out)(f"study: {part.name} {late}")
            continue
        say(out)(f"== study part {i}/{len(ready)}: episode {part.episode} {part.name} "
                 f"({time.monotonic() - t0:.0f} s elapsed, {sp.estimate_s:.0f} s planned) ==")
        why, t_part = "", time.monotonic()
        try:
            code = run_comparison(planned.comp, run_dir / part.name, out, "study",
                                  planned, recorder, ref, {keys.STUDY_PART: part.name,
                                                           keys.EPISODE: str(part.episode)})
        except KeyboardInterrupt as exc:
            code, why = EXIT_INTERRUPTED, interrupt_reason(exc)
        sp.actual_s[part.name] = time.monotonic() - t_part
        if sp.overran(part.name):
            say(out)(f"study: {part.name} {sp.overran(part.name)} ({sp.actual_s[part.name]:.0f} s, planned "
                     f"{sp.part_estimates[part.name]:.0f} s)")
        worst = max(worst, code)
        if ref is not None:  # after each part: a study cut off later (a command's time limit) keeps what finished
            best_effort(out, "run export", lambda: export_tree(ref.tracker.uri, ref.run_id, run_dir))
        if code == EXIT_INTERRUPTED:
            # a part that stopped its own guests at an interrupt returns its code; the handler knows the signal
            sp.skips += [Skip(p.name, why or interrupt_reason()) for p, _ in ready[i:]]
            return code
    return worst


def record_plan(recorder: Recorder, ref: RunRef | None, settings: StudySettings, sp: StudyPlan, elapsed: float,
                run_dir: Path, inv: Inventory) -> None:
    """The plan, the settings, how long it took and where (host, GPUs, git SHA, libraries) on the study run."""
    settings_params = {f"study.{k}": ",".join(v) if isinstance(v, list) else v for k, v in vars(settings).items()}
    params = {**inv.as_params(), **settings_params,
              "tier": sp.tier, "repeats": sp.repeats, "estimate_s": round(sp.estimate_s), "gpus": sp.gpus,
              "elapsed_s": round(elapsed), "parts": ",".join(p.name for p in sp.parts)}
    tags = {keys.SKIPS: json.dumps([[s.what, s.why] for s in sp.skips]),
            keys.ESTIMATES_FROM: json.dumps(sp.sources)}
    metrics = {"elapsed_s": elapsed, **{f"{name}.estimate_s": s for name, s in sp.part_estimates.items()},
               **{f"{name}.actual_s": s for name, s in sp.actual_s.items()}}
    recorder.comparison_results(ref, mlflow_runs.ComparisonResults(params, metrics, tags), run_dir)


def show_timing(out: Console, sp: StudyPlan) -> None:
    """Each part's planned seconds beside what it took, a part past twice its estimate said."""
    from rich.table import Table

    table = Table(title="study: the parts, planned and taken", title_justify="left",
                  caption="estimate: the planner's (seconds per phase run from: " + "; ".join(
                      f"{w} {how}" for w, how in sp.sources.items()) + ")", caption_justify="left")
    for col in ("part", "estimate s", "took s", ""):
        table.add_column(col, justify="right" if col.endswith(" s") else "left")
    for name, planned in sp.part_estimates.items():
        took = sp.actual_s.get(name)
        table.add_row(name, f"{planned:.0f}", f"{took:.0f}" if took is not None else "not run", sp.overran(name))
    out.print(table)


def publish(ref: RunRef, experiment: str, run_dir: Path, out: Console) -> list[Path]:
    """The report, read back from the store the study run is in."""
    def build() -> list[Path]:
        study = results.of_study(ref.tracker.uri, experiment, ref.run_id)
        files = study_report.write(study, run_dir)
        out.print(study_report.console_table(study))
        return files

    return best_effort(out, "study report", build) or []


def require_fits(sp: StudyPlan, budget_s: float) -> None:
    """A plan trimmed to one part and still over the budget would stop at its deadline: refused before it starts."""
    if sp.estimate_s > budget_s:
        raise ConfigError(f"study.budget_s={budget_s:g}: the smallest study this host can run ("
                          f"{', '.join(p.name for p in sp.parts)}, {sp.tier} sizes) takes about {sp.estimate_s:.0f} s "
                          f"by its estimate; give study.budget_s >= {math.ceil(sp.estimate_s / PLAN_SHARE)}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    started = time.monotonic()  # the budget counts from here: the probe's seconds are the study's too
    register_configs()
    mine, overrides = split_args([a for a in argv if a != "--plan"])
    out = console()
    try:
        require_parseable(overrides)
        refuse_run_dirs(overrides, "study", "study.out_dir", "outputs/study")
        settings = load_settings(mine)
        inv = inventory.collect()
        gpus, gpu_status = gpus_to_plan_with(inv, overrides)
        known = Measured(gpu_work=load_timings(settings.timings), cores=inv.cpus_usable)
        missing = missing_components()
        sp = plan_study(gpus, missing, settings, known)
        comps = compose_parts(sp, overrides)
        require_output_dir(settings.out_dir, "study.out_dir")
        for comp in comps.values():  # each part's store, cache and artifact folders, before anything starts
            check_out_dirs(comp.cfg)
        planned = [sp.overrides(p) for p in sp.parts]
        # a probe is a bench on this host: not for --plan, nor where the parts' guests run elsewhere (a Ray fleet)
        on_host = all(c.cfg.backend is not BackendKind.ray for c in comps.values())
        sp = measured_plan(sp, lambda measured: plan_study(gpus, missing, settings, measured), known, settings, inv,
                           overrides, "--plan" not in argv and on_host, out)
        if [sp.overrides(p) for p in sp.parts] != planned:  # trimmed otherwise by what was measured
            comps = compose_parts(sp, overrides)
        sp.deadline = started + settings.budget_s
        require_fits(sp, settings.budget_s)
        show_plan(out, sp, gpu_status)
        if "--plan" in argv:
            return 0
        (ready, skips), cores = lease(sp, comps, Path(settings.out_dir), out)
        cores.acquire(sorted(os.sched_getaffinity(0)))  # and the rest of the host, for the whole study
        sp.skips += skips
        if not ready:
            fail("nothing of the study can run on this host: " + "; ".join(map(str, sp.skips)))
    except (BenchError, HydraException, OmegaConfBaseException) as exc:
        fail(one_line(exc))
    stop_on_signals()
    run_dir, t0 = study_dir(Path(settings.out_dir)), time.time()
    cfg = ready[0][1].comp.cfg
    recorder = Recorder(cfg, say(out))
    ref = recorder.start_comparison(f"study-{run_dir.name}", {keys.ROLE: "study", keys.KIND: results.STUDY_KIND})
    with cores:  # held from planning to the last part's end
        code = run_parts(ready, sp, run_dir, recorder, ref, out)
    show_timing(out, sp)
    record_plan(recorder, ref, settings, sp, time.time() - t0, run_dir, inv)
    files = publish(ref, cfg.experiment, run_dir, out) if ref is not None else []
    recorder.finish(ref, files, "FINISHED" if code == 0 else ("KILLED" if code == EXIT_INTERRUPTED else "FAILED"))
    if ref is not None:
        best_effort(out, "run export", lambda: export_tree(ref.tracker.uri, ref.run_id, run_dir))
    say(out)(f"study: {run_dir / 'report.html'} ({time.time() - t0:.0f} s); elsewhere: "
             f"`python -m suites sync --run-dir {run_dir}`")
    return code


if __name__ == "__main__":
    sys.exit(main())
