"""The end of a sweep (``make bench -m profile=a,b``): one table across its jobs, printed and recorded.

Registered in configs/config.yaml as a Hydra callback; it runs where the sweep was launched, after every job
(local, submitit or Slurm) has returned.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from suites import store_keys as keys
from suites.config.compose import without_hydra
from suites.config.schema import load
from suites.errors import first_line
from suites.pipeline.jobs import redact_files, redact_logs
from suites.pipeline.orchestrate import best_effort, console, say
from suites.record import rundir
from suites.record.recorder import Recorder
from suites.record.sweep_points import collect
from suites.render import plots
from suites.render.tables import sweep_csv_rows, sweep_notes, sweep_table
from suites.validity import NOT_ENFORCED


class SweepSummary(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        redact_logs()  # Hydra's launchers log every job's overrides, a tracking_uri among them

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        out = console()
        sweep_dir = Path(config.hydra.sweep.dir)
        redact_files(sweep_dir, "multirun.yaml")
        rows = collect(sweep_dir)
        if not rows:
            return
        not_ok = sweep_notes(rows)
        out.print(sweep_table(rows, f"sweep summary: {len(rows)} job(s)" +  # its folder: the line under it
                              (f", {len(not_ok)} not ok" if not_ok else "")))
        for line in not_ok:
            say(out)(f"note: {line}")
        weak = [r.job for r in rows if r.validity == NOT_ENFORCED]
        if weak:
            say(out)(f"note: {len(weak)} of {len(rows)} job(s) ran with the profile not enforced (no GPU): their "
                     "differences are this host's CPU noise, not the profiles'")
        csv = sweep_dir / "sweep_summary.csv"
        rundir.write_csv(sweep_csv_rows(rows), csv)
        png = best_effort(out, "sweep plot", lambda: plots.sweep(rows, sweep_dir / "sweep_summary.png",
                                                                 f"sweep: {len(rows)} job(s) in {sweep_dir.name}"))
        files = [f for f in (csv, png) if f is not None]
        try:
            run_id = record(config, sweep_dir, files, len(rows), min((r.started_at for r in rows if r.started_at),
                                                                     default=time.time()))
        except Exception as exc:  # the table and the CSV are there; the store is the extra
            say(out)(f"warning: sweep summary not recorded in MLflow ({first_line(exc)}); see {csv}")
            return
        if run_id:
            say(out)(f"sweep summary: {csv}" + (f", {png.name}" if png else "") + f" (MLflow run {run_id})")


def record(config: DictConfig, sweep_dir: Path, files: list[Path], jobs: int, started_at: float) -> str | None:
    """A ``sweep`` run holding the summary, beside the jobs' own runs in the same experiment (its Duration: from
    the first job's start to now), through the Recorder (its fallback store where the sweep's own fails); its id, or
    None where no store took it (said)."""
    recorder = Recorder(load(without_hydra(config)), say(console()))
    return recorder.whole_run(f"sweep-{sweep_dir.name}", {keys.ROLE: keys.SWEEP},
                              {"sweep_dir": str(sweep_dir), "jobs": jobs}, files, started_at)
