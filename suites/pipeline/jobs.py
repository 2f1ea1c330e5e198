"""Hydra's task function: one job, a single run or one point of a sweep.

A single run's refusal or interrupt ends the command (one ``error:`` line, exit 2 or 130). A sweep's point does
not end the sweep: a point refused or failing is recorded as such in its job folder (``point.json``: its
overrides, status and reason) and the sweep goes on to its next point; after an interrupt the points not yet run
are recorded as not run. Either way Hydra reaches the end of the sweep, where the summary is written for the
points that ran (suites/pipeline/sweep_summary.py), and the command's exit code says whether every point finished ok.
"""

from __future__ import annotations

import logging
import shutil
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from suites.config.compose import Composition, compose_run
from suites.errors import BenchError, fail, first_line, redact
from suites.pipeline.orchestrate import run_command
from suites.record.sweep_points import write_point
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.shield import interrupt_reason, stop_on_signals


@dataclass
class SweepState:
    """What the launching process knows of its sweep: each point's swept values (its name), and the job an
    interrupt stopped it at (the basic launcher runs every job in this process)."""

    named: list[list[str]] = field(default_factory=list)
    interrupted_at: int | None = None

    def label(self, num: int) -> str:
        return " ".join(self.named[num]) if 0 <= num < len(self.named) and self.named[num] else f"job {num}"


def task(composed: Composition | None, sweep: SweepState | None = None) -> Callable[[DictConfig], None]:
    """Hydra's task function: what was composed before Hydra started, else this job's own composition."""
    def main(dcfg: DictConfig) -> None:
        hc = HydraConfig.get()
        # Here, not in cli(): a job launched by submitit (Slurm) never ran cli(), and submitit ignores SIGTERM,
        # which is what scancel sends; so every job, however launched, stops its guests and records itself.
        stop_on_signals()
        redact_logs()
        redact_files(Path(hc.runtime.output_dir) / str(hc.output_subdir or ".hydra"))
        if hc.mode == RunMode.MULTIRUN:
            run_point(dcfg, sweep or SweepState())
        else:
            run_single(composed, dcfg)

    return main


def launch(comp: Composition | None, dcfg: DictConfig) -> int:
    hc = HydraConfig.get()
    comp = comp or compose_run(list(hc.overrides.task), dcfg)
    launcher = str(hc.runtime.choices.get("hydra/launcher", "basic"))
    return run_command(comp, Path(hc.runtime.output_dir), launcher=launcher)


def run_single(composed: Composition | None, dcfg: DictConfig) -> None:
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        code = launch(composed, dcfg)
    except BenchError as exc:
        discard_unused(run_dir)
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt as exc:  # before the guests started, or a recording given up on (run/shield.py)
        discard_unused(run_dir)
        kept = f"what was measured is in {run_dir}" if run_dir.exists() else "nothing had started"
        print(f"{interrupt_reason(exc)}: {kept}", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    if code:
        sys.exit(code)


def run_point(dcfg: DictConfig, sweep: SweepState) -> None:
    """One sweep point, which never ends the sweep: what it did, or why it did not, is in its folder."""
    hc = HydraConfig.get()
    run_dir, num = Path(hc.runtime.output_dir), int(hc.job.num)
    label, overrides = sweep.label(num), [redact(o) for o in hc.overrides.task]  # a tracking_uri's credentials
    what = (str(OmegaConf.select(dcfg, "profile.name", default="?")),
            str(OmegaConf.select(dcfg, "workload.name", default="?")))
    if sweep.interrupted_at is not None:
        write_point(run_dir, label, overrides, "not run", f"the sweep was interrupted at job {sweep.interrupted_at}",
                    what)
        return
    status, reason = "", ""
    try:
        if launch(None, dcfg) == EXIT_INTERRUPTED:  # its guests stopped and recorded (results.json): stop here
            sweep.interrupted_at = num
    except BenchError as exc:
        status, reason = "refused", str(exc)
    except KeyboardInterrupt as exc:
        sweep.interrupted_at = num
        status, reason = "interrupted", interrupt_reason(exc)
    except Exception as exc:  # a defect met by one point: recorded with its traceback, the next point still runs
        logging.getLogger(__name__).error("sweep job %d (%s):\n%s", num, label, traceback.format_exc())
        status, reason = "failed", first_line(exc)
    if status:
        print(f"error: sweep job {num} ({label}): {status}: {reason}", file=sys.stderr)
    write_point(run_dir, label, overrides, status, reason, what)


class Redacting(logging.Filter):
    """Log lines without credentials (urllib3 logs the URL it retries, Hydra's launchers every job's overrides)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), ()
        return True


def redact_logs() -> None:
    """Every handler Hydra configured (console, the run's log file) redacts what it writes."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, Redacting) for f in handler.filters):
            handler.addFilter(Redacting())


def redact_files(folder: Path, pattern: str = "*.yaml") -> None:
    """Hydra's own copies of the config and the overrides: no credentials (a tracking_uri may carry them)."""
    for path in folder.glob(pattern) if folder.is_dir() else []:
        text = path.read_text()
        clean = redact(text)
        if clean != text:
            path.write_text(clean)


def discard_unused(run_dir: Path) -> None:
    """A run that ended before anything started leaves no run directory: Hydra makes one (its .hydra/ and an
    empty log) before the task can tell; anything else in it means something ran, and it stays."""
    hydra_files = {run_dir / ".hydra", run_dir / f"{HydraConfig.get().job.name}.log"}
    content = list(run_dir.iterdir()) if run_dir.is_dir() else []
    if all(p in hydra_files and (p.is_dir() or p.stat().st_size == 0) for p in content):
        shutil.rmtree(run_dir, ignore_errors=True)
