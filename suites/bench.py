"""``python -m suites.bench [overrides]``: compose, validate, run, report, record.

Configuration errors are checked by composing the config once before Hydra
takes over, so a bad override is one ``error:`` line (exit 2) within a
second, before any guest process exists.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from suites.config import BenchConfig, load, one_line
from suites.errors import BenchError

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


def precheck(overrides: list[str]) -> BenchConfig:
    """Compose and validate exactly as the run will, without starting anything."""
    from suites.runner.compare import compose_phase, compose_with
    from suites.runner.execute import workload_groups
    from suites.runner.study import all_phases

    cfg, _ = compose_with([o for o in overrides if not o.startswith(("hydra.", "hydra/"))])
    if cfg.scenario.compares:  # every phase must compose too, before any starts
        for phase in all_phases(cfg):
            try:
                workload_groups(compose_phase(overrides, phase)[0])
            except (BenchError, HydraException, OmegaConfBaseException) as exc:
                raise BenchError(f"phase {phase.label}: {one_line(exc)}") from exc
    else:
        workload_groups(cfg)  # each group of a mix composes its own workload
    return cfg


def fail(message: str, code: int = 2) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def console() -> Any:
    from rich.console import Console

    # Off a terminal rich assumes 80 columns; a results table is worth more width than that.
    return Console(width=None if sys.stdout.isatty() else 160)


def run_one(cfg: BenchConfig, dcfg: DictConfig, run_dir: Path, tracker: Any, planned: Any = None,
            under: str | None = None, tags: dict[str, str] | None = None) -> tuple[Any, str | None]:
    """One scenario run: execute, print, record; returns (outcome, MLflow run id or None)."""
    from suites.runner import record, report
    from suites.runner.execute import describe, execute

    base_dir = Path(hydra.utils.get_original_cwd())
    outcome = execute(cfg, base_dir, run_dir, OmegaConf.to_yaml(dcfg, resolve=True), planned)
    out = console()
    title = f"{cfg.scenario.name}: {describe(cfg)}"
    out.print(report.results_table(outcome, title))
    viewsets = report.viewset_table(outcome)
    if viewsets is not None:
        out.print(viewsets)
    for line in report.summary_lines(outcome):
        out.print(line, markup=False, highlight=False)
    if tracker is None:
        return outcome, None
    config_params = record.flatten(OmegaConf.to_container(dcfg, resolve=True, enum_to_str=True))  # type: ignore[arg-type]
    # How the job was launched (basic, submitit_local, slurm): provenance for sweeps run elsewhere.
    tags = {"bench.launcher": str(HydraConfig.get().runtime.choices.get("hydra/launcher", "basic")), **(tags or {})}
    try:
        run_id = record.to_mlflow(outcome, tracker, config_params, run_dir, run_name(cfg, run_dir), under=under,
                                  tags=tags)
    except Exception as exc:  # results are already in run_dir; never lose them to a tracking error
        fallback = None if tracker.fallback_for else fallback_tracker(cfg, tracker.uri, exc)
        if fallback is None:
            out.print(f"warning: MLflow recording failed ({one_line(exc)}); results kept in {run_dir}", markup=False)
            return outcome, None
        tags = {**(tags or {}), **({"bench.comparison_parent": under} if under else {})}
        run_id = record.to_mlflow(outcome, fallback, config_params, run_dir, run_name(cfg, run_dir), tags=tags)
    out.print(f"mlflow: run {run_id} (make ui to browse); results: {run_dir}", markup=False, highlight=False)
    return outcome, run_id


def run_name(cfg: BenchConfig, run_dir: Path) -> str:
    """The run directory's name, made readable for multirun jobs (whose directories are 0, 1, 2...)."""
    if run_dir.name.isdigit():
        return f"{cfg.scenario.name}-{cfg.profile.name}-{cfg.workload.name}-{run_dir.name}"
    return run_dir.name


def open_tracker(cfg: BenchConfig) -> Any:
    from suites.runner import record

    base_dir = Path(hydra.utils.get_original_cwd())
    uri = record.resolve_tracking_uri(cfg.tracking_uri, base_dir)
    try:
        return record.Tracker(uri, cfg.experiment, base_dir / cfg.artifact_dir)
    except Exception as exc:
        return fallback_tracker(cfg, uri, exc)


def fallback_tracker(cfg: BenchConfig, uri: str, exc: Exception) -> Any:
    """The local fallback store when ``uri`` fails: nothing measured is lost; import it later."""
    from suites.runner import record

    base_dir = Path(hydra.utils.get_original_cwd())
    local = record.resolve_tracking_uri(cfg.fallback_tracking_uri, base_dir)
    out = console()
    if local == uri:
        out.print(f"warning: MLflow store {uri} unusable ({one_line(exc)}); results stay in the run directory",
                  markup=False)
        return None
    try:
        tracker = record.Tracker(local, cfg.experiment, base_dir / cfg.artifact_dir, fallback_for=uri)
    except Exception as exc2:
        out.print(f"warning: MLflow stores {uri} and {local} unusable ({one_line(exc2)}); results stay in the run "
                  "directory", markup=False)
        return None
    out.print(f"warning: MLflow store {uri} unreachable ({one_line(exc)}); recording to the fallback store {local}; "
              f"import later: python -m suites.runner.sync --from {local} --to {uri}", markup=False, highlight=False,
              soft_wrap=True)  # one line, so logs and greps see the whole command
    return tracker


def run(cfg: BenchConfig, dcfg: DictConfig) -> int:
    from suites.runner.execute import plan

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    base_dir = Path(hydra.utils.get_original_cwd())
    if cfg.scenario.compares:
        from suites.runner.compare import run_comparison
        from suites.runner.study import StudyRun

        study = StudyRun(cfg) if cfg.scenario.kind != "plain" else None
        return run_comparison(cfg, list(HydraConfig.get().overrides.task), run_dir, open_tracker, run_one, console(),
                              study=study, fallback=fallback_tracker)
    planned = plan(cfg, base_dir)  # placement and data problems end here, before any store is touched
    outcome, run_id = run_one(cfg, dcfg, run_dir, open_tracker(cfg), planned)
    return outcome.exit_code if run_id else max(outcome.exit_code, 1)  # unrecorded counts as a failure


@hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
def main(dcfg: DictConfig) -> None:
    try:
        cfg = load(dcfg)
        code = run(cfg, dcfg)
    except BenchError as exc:
        fail(str(exc), exc.exit_code)
    if code:
        sys.exit(code)


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # so SIGTERM stops guests and records like Ctrl-C


def cli() -> None:
    args = sys.argv[1:]
    if not any(a.startswith("-") for a in args):  # flags (-m, --cfg, --help) are Hydra's to handle
        try:
            precheck(args)
        except (BenchError, HydraException, OmegaConfBaseException, ValueError) as exc:
            fail(one_line(exc))
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    main()


if __name__ == "__main__":
    cli()
