"""One scenario run, from its plan to its record: execute, keep its results in its run directory and show them,
then draw its utilisation plot and store it in MLflow.

A comparison's repeats keep their results at once and leave the plot and the store for after its last repeat
(:class:`Pending`): the plot (0.4-0.7 s here) and the store (0.15 s) were paid between every two timed windows.
Until stored, each run's ledger note stays (suites/record/owed.py): a runner killed in between leaves nothing
measured unrecorded.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf
from rich.console import Console

from suites import store_keys as keys
from suites.config.compose import scenario_title
from suites.config.schema import BenchConfig
from suites.errors import redact
from suites.pipeline.output import best_effort, say
from suites.record import mlflow_runs, owed
from suites.record.recorder import Recorder, RunRef
from suites.render import plots, tables
from suites.run.execute import Around, execute
from suites.run.outcome import ScenarioOutcome
from suites.run.plan import Plan
from suites.run.shield import Shield

__all__ = ["Nest", "Pending", "run_name", "run_scenario", "show", "store_all"]


@dataclass
class Nest:
    """Where a run is recorded: the recorder, the run it nests under (a comparison's, a campaign's), the tags it
    carries, and how it was launched (basic, submitit_local, slurm, or the campaign that ran it)."""

    recorder: Recorder
    parent: RunRef | None = None
    tags: dict[str, str] = field(default_factory=dict)
    launcher: str = "basic"

    def under(self, parent: RunRef | None, tags: dict[str, str]) -> Nest:
        """The same recorder and launcher, one level down."""
        return Nest(self.recorder, parent, tags, self.launcher)


def run_scenario(planned: Plan, run_dir: Path, out: Console, nest: Nest, around: Around | None = None,
                 later: list[Pending] | None = None) -> tuple[ScenarioOutcome, str | None]:
    """One scenario run: execute (with what its comparison's runs share, ``around``), write its run directory,
    show it, record it; (outcome, MLflow run id or None). With ``later``, its plot and store wait there (None for
    the id): the caller stores them (:func:`store_all`) after its last run."""
    cfg, dcfg, recorder = planned.cfg, planned.run.dcfg, nest.recorder
    recorder.provenance(run_dir, redact(OmegaConf.to_yaml(dcfg, resolve=True)), planned.inventory)
    # How the job was launched (basic, submitit_local, slurm): provenance for sweeps run elsewhere.
    tags = {keys.LAUNCHER: nest.launcher, keys.RUN_DIR: str(run_dir.resolve()), **nest.tags}
    name = run_name(cfg, run_dir)
    owes = recorder.owe(run_dir, name, nest.parent, tags)  # a runner killed from here on: the next command records it
    try:
        outcome = execute(planned, run_dir, around)
    except BaseException:  # nothing started (an interrupt before the guests ran) or a defect said here: owed nothing
        owed.paid(owes)
        raise
    with Shield(say(out), f"recording what was measured (results.json in {run_dir})"):
        kept = recorder.local(outcome, run_dir)  # before anything else can fail: results survive a plot or store
        show(out, outcome, f"{cfg.scenario.name}: {scenario_title(cfg)}")
        pending = Pending(planned, outcome, run_dir, kept, (name, nest, tags), owes)
        if later is not None:
            later.append(pending)
            return outcome, None
        return outcome, pending.store(out)


@dataclass
class Pending:
    """A run measured and kept in its run directory (or the rescue folder ``kept`` names; None: neither), its plot
    and store still to come; ``named``: its run name, where it nests, its tags."""

    planned: Plan
    outcome: ScenarioOutcome
    run_dir: Path
    kept: Path | None
    named: tuple[str, Nest, dict[str, str]]
    owes: str = ""  # its ledger note's key (suites/record/owed.py)
    drawn: bool = False  # its plot already drawn (:func:`draw_apart`)

    @property
    def files(self) -> Path:
        """The run's files: its folder, or the rescue folder its results went to."""
        return self.kept or self.run_dir

    @property
    def plot(self) -> Path:
        return self.files / "utilisation.png"

    def store(self, out: Console) -> str | None:
        """Its utilisation plot, its MLflow run (the ledger note paid); the run's id, or None where no store took it."""
        outcome, files, (name, nest, tags) = self.outcome, self.files, self.named
        if not self.drawn:
            best_effort(out, "utilisation plot", lambda: plots.utilisation(outcome, self.plot))
        params = mlflow_runs.config_params(OmegaConf.to_container(self.planned.run.dcfg, resolve=True,  # type: ignore[arg-type]
                                                                  enum_to_str=True))
        run_id = nest.recorder.scenario(outcome, params, files, name, nest.parent, tags)
        owed.paid(self.owes)
        if run_id:
            say(out)(f"mlflow: run {run_id} ({nest.recorder.browse()}); results: {files}")
        elif self.kept is None:  # neither a file nor a store holds them: the figures themselves, in the last line
            print(f"error: nothing could be recorded; what was measured: {tables.figures_line(outcome)}",
                  file=sys.stderr)
        return run_id


def store_all(later: list[Pending], out: Console) -> list[str | None]:
    """Every pending run's plot and store, in the order they ran, under one shield (an interrupt waits for them)."""
    if not later:
        return []
    with Shield(say(out), f"storing the {len(later)} run(s) measured (plots and MLflow)"):
        draw_apart(later)
        ids = [p.store(out) for p in later]
        later.clear()
        return ids


def show(out: Console, outcome: ScenarioOutcome, title: str) -> None:
    out.print(tables.results_table(outcome, title))
    viewsets = tables.viewset_table(outcome)
    if viewsets is not None:
        out.print(viewsets)
    for line in tables.summary_lines(outcome):
        say(out)(line)


def run_name(cfg: BenchConfig, run_dir: Path) -> str:
    """The run directory's name, made readable for multirun jobs (whose directories are 0, 1, 2...)."""
    if run_dir.name.isdigit():
        return f"{cfg.scenario.name}-{cfg.profile.name}-{cfg.workload.name}-{run_dir.name}"
    return run_dir.name


def draw_apart(later: list[Pending]) -> None:
    """The runs' utilisation plots drawn at once by forked workers, one per core this process may use (at most 4):
    drawn one after another here, six of them were two seconds after a comparison's last window. pyplot is imported
    first, so each worker has it; a worker leaves with ``os._exit`` (none of this process's files, store or
    handlers is touched) and ignores Ctrl-C, which this process's shield takes. A plot a worker did not write is
    drawn here afterwards (:meth:`Pending.store`), its failure a warning as ever."""
    workers = min(len(later), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1, 4)
    if workers < 2 or not hasattr(os, "fork"):
        return
    plots.warm()  # pyplot, its fonts and renderer set up once, here: each worker then starts warm
    pids = []
    for share in (later[i::workers] for i in range(workers)):
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                for p in share:
                    plots.utilisation(p.outcome, p.plot)
                code = 0
            finally:
                os._exit(code)
        pids.append((pid, share))
    deadline = time.monotonic() + DRAW_S
    for pid, share in pids:
        code = reaped(pid, deadline)
        for p in share:
            p.drawn = code == 0 and p.plot.is_file()


DRAW_S = 120.0  # a worker not done by then (one wedged on a lock another thread held at the fork) is killed


def reaped(pid: int, deadline: float) -> int | None:
    """The worker's exit code once it ends; killed at ``deadline`` (None: its plots are then drawn here)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.01)
