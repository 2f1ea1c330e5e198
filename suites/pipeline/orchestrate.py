"""The assembly of one command: plan -> execute -> record -> render, for a scenario or each phase of a comparison.

Everything is planned (placed, data resolved) before the store is touched;
every run's results reach its run directory before MLflow; a plot or report
that cannot be drawn is a warning, never the end of the run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from gpu_probe.hostload import other_load
from gpu_probe.inventory import Inventory
from gpu_probe.procfs import started_at
from suites import store_keys as keys
from suites.backends.corelock import CoresHeld
from suites.backends.forkserver import ForkServer
from suites.config.compose import Composition, RunConfig
from suites.config.schema import BenchConfig
from suites.errors import BenchError, PlacementError
from suites.pipeline.output import best_effort, console, say
from suites.pipeline.scenario_run import Nest, Pending, run_scenario, store_all
from suites.record import mlflow_runs, reader, rundir
from suites.record.recorder import Recorder, RunRef
from suites.render import mixed_report, plots, tables
from suites.run import harness, marks
from suites.run.comparison import PhaseRow, curves, normalise, phase_row, row_metrics, row_tags
from suites.run.execute import Around, one_daemon
from suites.run.mixed import MixedRun, miss_words
from suites.run.outcome import EXIT_INTERRUPTED, ScenarioOutcome, busy_check_on
from suites.run.plan import Plan, plan, plan_and_lease, require_enforced
from suites.run.shield import Shield, honour, interrupt_reason, noted, reason
from suites.run_kinds import RunKind
from suites.validity import NOT_ENFORCED, first_reason
from suites.workloads.timing import CALIBRATION_KEYS

__all__ = ["Nest", "PlannedComparison", "best_effort", "console", "plan_comparison", "plan_phases", "run_command",
           "run_comparison", "said_miss", "say"]


def run_command(comp: Composition, run_dir: Path, launcher: str) -> int:
    """The whole command; its exit code (a run that reached no store counts as a failure)."""
    out = console()
    if comp.cfg.strict:
        refuse_busy_host(comp.cfg.host_busy_pct)
    if comp.compares:
        phases, cores = plan_and_lease(lambda: plan_comparison(comp, out), lambda c: c.plans, run_dir,
                                       comp.cfg.wait_for_cores_s, say(out))
        with cores:
            around = Around()
            try:  # while the store opens: the preloaded guest's imports, and a look at the host
                around.preload(phases.plans)
                around.look_now(comp.cfg.host_busy_pct)
                return run_comparison(phases, run_dir, out, Nest(Recorder(comp.cfg, say(out)), launcher=launcher),
                                      around)
            finally:
                around.close()  # stopped already where the phases ran; here where the store's opening did not end
    # placement and data problems end here, before any store is touched
    planned, cores = plan_and_lease(lambda: plan(comp.runs[0]), lambda p: [p], run_dir,
                                    comp.cfg.wait_for_cores_s, say(out))
    if comp.cfg.strict:
        require_enforced([planned])
    with cores:
        recorder = Recorder(comp.cfg, say(out))
        outcome, run_id = run_scenario(planned, run_dir, out, Nest(recorder, launcher=launcher))
    if killed_if_noted(recorder, run_id, "the run", out):  # a signal held off while it stopped or recorded
        return EXIT_INTERRUPTED
    return outcome.exit_code if run_id else max(outcome.exit_code, 1)


def killed_if_noted(recorder: Recorder, run_id: str | None, what: str, out: Console) -> bool:
    """A signal a shield held off (suites/run/shield.py) is honoured here, where stopping loses nothing: the run,
    recorded whole, is ended KILLED with the signal's name (``bench.stopped``), said. True: the command stops."""
    signum = honour()
    if signum is None:
        return False
    why = f"{reason(signum)} while its results were recorded"
    if run_id is not None and recorder.tracker is not None:
        recorder.stopped(RunRef(recorder.tracker, run_id), why)
    say(out)(f"{why}: {what} is recorded{' (run ' + run_id + ')' if run_id else ''}, ended KILLED; nothing more "
             "starts")
    return True


def refuse_busy_host(threshold_pct: float) -> None:
    """strict=true: a host that other processes keep busy is refused before anything starts."""
    if not busy_check_on(threshold_pct):
        return
    load = other_load(0.5)
    if load.other_pct > threshold_pct:
        raise BenchError(f"host busy: {load.text()} > host_busy_pct={threshold_pct:g}; strict=true refuses to "
                         "measure beside them (stop them, or run without strict=true: figures are then marked)")


def plan_phases(runs: list[RunConfig], mixed: MixedRun | None, out: Console,
                inv: Inventory | None = None) -> list[Plan]:
    """Every phase placed and given its data before any starts; a consolidation stops at its capacity. The phases
    train data of one size: where any phase's guests have GPUs, a phase without (the CPU arm of gpu-vs-cpu) is
    planned again with the GPU phases' stand-in, so a ratio between them compares the same work."""
    plans = planned_each(runs, mixed, out, inv)
    if any(p.gpus for pl in plans for p in pl.placements):
        plans = [pl if any(p.gpus for p in pl.placements) else plan(pl.run, pl.inventory, for_gpu=True)
                 for pl in plans]
    return plans


def planned_each(runs: list[RunConfig], mixed: MixedRun | None, out: Console, inv: Inventory | None) -> list[Plan]:
    plans = []
    for run in runs:
        try:
            plans.append(plan(run, inv))
        except PlacementError as exc:
            held = isinstance(exc, CoresHeld)  # other runs' cores: not this profile's capacity
            if held or mixed is None or run.phase is None or not mixed.placement_failed(run.phase, exc):
                if held:  # stays one, naming the other run that holds the cores: it may be waited for
                    raise CoresHeld(f"phase {run.label}: {exc}", exc.held) from exc  # type: ignore[attr-defined]
                raise type(exc)(f"phase {run.label}: {exc}") from exc
            say(out)(f"note: {mixed.capacity_note}")
            break
        except BenchError as exc:
            raise type(exc)(f"phase {run.label}: {exc}") from exc
    return plans


@dataclass
class PlannedComparison:
    """A comparison's phases, placed and given their data, before any starts (and a mixed scenario's state)."""

    comp: Composition
    plans: list[Plan]
    mixed: MixedRun | None


def plan_comparison(comp: Composition, out: Console) -> PlannedComparison:
    mixed = MixedRun(comp.cfg) if comp.cfg.scenario.kind != RunKind.PLAIN else None
    if mixed is not None and mixed.memory_note:
        say(out)(f"note: {mixed.memory_note}")
    plans = plan_phases(comp.runs, mixed, out)
    if comp.cfg.strict:
        require_enforced(plans)
    return PlannedComparison(comp, plans, mixed)


def run_comparison(planned: PlannedComparison, run_dir: Path, out: Console, nest: Nest,
                   around: Around | None = None) -> int:
    """Every phase, repeated and interleaved; then the table normalised to the baseline (n, CI, verdict), its
    plot, and the comparison run (nested under ``nest.parent``, as a campaign's parts are, with its tags)."""
    cfg, name, recorder = planned.comp.cfg, planned.comp.cfg.scenario.name, nest.recorder
    plans, mixed = planned.plans, planned.mixed
    # the command's own comparison counts its wall from the command's start; a campaign's part, from its own
    t0 = started_at() if nest.parent is None else time.time()
    ref = recorder.start_parent(f"{name}-{run_dir.name}", {**mlflow_runs.comparison_tags(
        name, cfg.scenario.kind, nest.tags), keys.RUN_DIR: str(run_dir.resolve())}, nest.parent)
    loop = PhaseLoop(nest.under(ref, {}), around or Around())
    outcomes, worst = measure_phases(planned, run_dir, out, loop)
    cost = harness.cost_of(loop.spans, t0, time.time())
    with Shield(say(out), f"recording the comparison (table and plot in {run_dir})"):
        rows = normalise([phase_row(label, runs) for label, runs in outcomes.items()], cfg.scenario.baseline)
        references = {p.run.label: p.run.phase.reference for p in plans if p.run.phase and p.run.phase.reference}
        baseline = cfg.scenario.baseline or rows[0].label
        # a reference figure only beside a measurement of the same thing: a ratio both of whose phases had their GPU
        base_weak = any(r.validity == NOT_ENFORCED for r in rows if r.label == baseline)
        on_cpu = all(r.validity == NOT_ENFORCED or r.gpus == 0 for r in rows)
        for r in rows:
            r.reference = "" if base_weak or r.validity == NOT_ENFORCED else references.get(r.label, "")
        title = show_comparison(planned, rows, baseline, out)
        if on_cpu and mixed is None:
            say(out)(tables.cpu_only_note(name, len(rows), bool(references)))
        rundir.write_csv([r.csv() for r in rows], run_dir / "comparison.csv")
        best_effort(out, "comparison plot", lambda: plots.comparison(rows, run_dir / "comparison.png", title))
        say(out)(f"comparison: {run_dir / 'comparison.csv'}, {run_dir / 'comparison.png'}")
        params = {"scenario": name, "workload": cfg.workload.name, "baseline": baseline,
                  "repeats": len(next(iter(outcomes.values()), [])), "phases": ",".join(r.label for r in rows),
                  **{f"reference.{label}": ref for label, ref in references.items()},
                  **(mixed.params() if mixed else {})}
        for line in harness.lines(cost, "this command" if nest.parent is None else "this comparison"):
            say(out)(line)
        rundir.write_atomic(run_dir / "harness.json", json.dumps(harness.as_json(cost, loop.spans), indent=1))
        results = mlflow_runs.ParentResults(params, {**row_metrics(rows), **(mixed.results() if mixed else {}),
                                                     **harness.metrics(cost)},
                                            {**row_tags(rows), **(marks.tags_of(mixed.score_marks()) if mixed
                                                                  else {})},
                                            curves(rows) if mixed is None else {})
        ref = recorder.parent_results(ref, results, run_dir)
        files = publish_report(ref, cfg, run_dir, out) if mixed is not None and ref is not None else []
        stopped = end_comparison(recorder, ref, files, worst, len(next(iter(outcomes.values()), [])))
    signum = honour()  # held off while the comparison was recorded: recorded whole, then ended KILLED all the same
    if signum is not None and not stopped:
        stopped = f"{reason(signum)} while the comparison was recorded"
        recorder.stopped(ref, stopped)
    if stopped:
        say(out)(f"{stopped}: the comparison is recorded" + (f" (run {ref.run_id})" if ref else "")
                 + ", ended KILLED; nothing more starts")
        return EXIT_INTERRUPTED
    if ref is not None and nest.parent is None:  # the command's own run, said last: the one a user publishes
        say(out)(f"comparison: run {ref.run_id}: publish this one (make publish RUN={ref.run_id}); the 'mlflow: run' "
                 "lines above are its phases'")
    return worst


def measure_phases(planned: PlannedComparison, run_dir: Path, out: Console,
                   loop: PhaseLoop) -> tuple[dict[str, list[ScenarioOutcome]], int]:
    """Every phase's repeats, then their plots and store once after the last (an interrupt or a fault included),
    then the preloaded guest stopped: an interrupt meanwhile is noted and ends the comparison KILLED once recorded."""
    if loop.around.forks is None:  # started at its first guest that may be forked, unless its command started it
        loop.around.forks = ForkServer()
    try:
        return run_phases(planned, run_dir, out, loop)
    finally:
        try:
            store_all(loop.later, out)
        finally:
            with Shield(say(out), "stopping the comparison's preloaded guest"):
                loop.around.close()


def show_comparison(planned: PlannedComparison, rows: list[PhaseRow], baseline: str, out: Console) -> str:
    """The comparison's tables (under a banner where a phase's figures are not a GPU's); their title."""
    cfg, mixed = planned.comp.cfg, planned.mixed
    name = cfg.scenario.name
    what = f"{cfg.scenario.mixed.cad.workload} + {cfg.scenario.mixed.ml.workload}" if mixed else cfg.workload.name
    title = (f"{name}: {what}, phases" if mixed else f"{name}: {what}, normalised to {baseline}") + \
        f" ({cfg.scenario.phase_repeats} repeat(s) each, interleaved)"
    banner = tables.validity_banner({r.label: r.validity for r in rows},
                                    first_reason(r.validity_reason for r in rows))
    if banner:
        out.print(Panel(banner, title="what these numbers are", border_style="red"))
    for table in tables.comparison_tables(rows, title, normalised=mixed is None):
        out.print(table)
    return title


def end_comparison(recorder: Recorder, ref: RunRef | None, files: list[Path], worst: int, repeats: int) -> str:
    """The comparison run's end: KILLED where an interrupt stopped its phases (or one is held off now), with why
    (returned), else FINISHED, or FAILED where a phase failed ('' returned)."""
    if worst != EXIT_INTERRUPTED and noted() is None:
        recorder.finish(ref, files, "FINISHED" if worst == 0 else "FAILED")
        return ""
    why = (f"{interrupt_reason()} after {repeats} repeat(s) of its first phase" if worst == EXIT_INTERRUPTED
           else f"{interrupt_reason()} while the comparison was recorded")
    recorder.stopped(ref, why, files)  # never FINISHED: the phases after the interrupt were not run
    return why


@dataclass
class PhaseLoop:
    """What every repeat of a comparison's phases shares: where it records, what its runs share (``around``: the
    MPS daemon, the host's look), the runs whose plot and store wait for the last repeat, and each repeat's
    timestamps for the harness's cost (suites/run/harness.py)."""

    nest: Nest
    around: Around = field(default_factory=Around)
    later: list[Pending] = field(default_factory=list)
    spans: list[harness.Span] = field(default_factory=list)


def run_phases(planned: PlannedComparison, run_dir: Path, out: Console,
               loop: PhaseLoop) -> tuple[dict[str, list[ScenarioOutcome]], int]:
    """Each repeat runs every phase once, in order (A B C A B C): drift hits all phases alike. A consolidation's
    counts instead each run their repeats in a row (A A A B B B): a count is judged on all of its repeats before the
    sweep decides to add a guest. Stops at an interrupt, or where a consolidation count misses QoS. (outcomes per
    phase label, worst exit code)"""
    plans, mixed, repeats = planned.plans, planned.mixed, planned.comp.cfg.scenario.phase_repeats
    in_a_row = mixed is not None and mixed.kind == RunKind.CONSOLIDATION
    order = [(r, p) for p in plans for r in range(1, repeats + 1)] if in_a_row else \
        [(r, p) for r in range(1, repeats + 1) for p in plans]
    with one_daemon(plans, run_dir) as shared:  # one MPS daemon for the phases, not one per phase
        loop.around.daemon = shared
        return each_phase(planned, order, run_dir, out, loop)


def each_phase(planned: PlannedComparison, order: list[tuple[int, Plan]], run_dir: Path, out: Console,
               loop: PhaseLoop) -> tuple[dict[str, list[ScenarioOutcome]], int]:
    """:func:`run_phases`' loop: each (repeat, phase) of ``order`` until an interrupt or the sweep's end."""
    mixed, repeats, nest = planned.mixed, planned.comp.cfg.scenario.phase_repeats, loop.nest
    outcomes: dict[str, list[ScenarioOutcome]] = {}
    worst = 0
    for r, phase in order:
        label, slug = phase.run.label, phase.run.label.replace("/", "-")
        overrides = phase.run.phase.overrides if phase.run.phase else []
        say(out)(f"phase {label}" + (f" (repeat {r}/{repeats})" if repeats > 1 else "")
                 + f": {' '.join(overrides) or '(as given)'}")
        begun = time.time()
        outcome, _ = run_scenario(phase, run_dir / (slug if repeats == 1 else f"{slug}-r{r}"), out,
                                  nest.under(nest.parent, {keys.PHASE: label, keys.SCENARIO: phase.cfg.scenario.name,
                                                           keys.REPEAT: str(r)}), loop.around, loop.later)
        loop.spans.append(harness.span_of(label, r, begun, time.time(), outcome))
        keep_sizing(phase, outcome)
        outcomes.setdefault(label, []).append(outcome)
        worst = max(worst, outcome.exit_code)
        if outcome.status == "interrupted" or noted() is not None:  # a signal held off while it recorded: stop
            if mixed is not None:
                mixed.interrupted = True
            return outcomes, worst
        if mixed is not None and not mixed.keep_going(label, outcome):
            say(out)(f"phase {label}: {said_miss(mixed.verdicts[label][1])}: sweep ends here, "
                     f"{mixed.counts_past_miss()} count(s) past the first miss ({mixed.first_miss})")
            return outcomes, worst
        if mixed is not None and not mixed.verdicts.get(label, (True, ""))[0]:
            say(out)(f"phase {label}: {said_miss(mixed.verdicts[label][1])}: the sweep goes on "
                     f"{mixed.settings.counts_past_miss - mixed.counts_past_miss()} more count(s), to show how QoS "
                     "breaks")
    return outcomes, worst


def keep_sizing(phase: Plan, outcome: ScenarioOutcome) -> None:
    """A phase's later repeats train the steps its first calibrated (suites/workloads/timing.py, ``earlier``): each
    guest that finished hands its sizing to its own spec, once; the guest takes it where it is one (a run sized by
    work, or open-ended, calibrates as ever)."""
    for g in outcome.guests:
        if g.result.ok and not g.spec.calibration:
            g.spec.calibration = {k: g.result.info[k] for k in CALIBRATION_KEYS if k in g.result.info}


def said_miss(why: str) -> str:
    """'missed QoS (p95 frame 140 ms > 100)', or an inconclusive count's own words: never called a miss."""
    return why if miss_words(why) == "no verdict" else f"missed QoS ({why})"


def publish_report(ref: RunRef, cfg: BenchConfig, run_dir: Path, out: Console) -> list[Path]:
    """The mixed scenario's report, read back from the store the comparison run is in; its files (none if it failed)."""
    def build() -> list[Path]:
        rep = reader.of_comparison(ref.tracker.uri, cfg.experiment, ref.run_id, cfg.scenario.kind)
        files = mixed_report.write(rep, run_dir / "report")
        for t in mixed_report.console_tables(rep):
            out.print(t)
        return files

    files = best_effort(out, "mixed report", build) or []
    if files:
        say(out)(f"report: {files[1]} (and report.md, figures; logged to the comparison run)")
    return files
