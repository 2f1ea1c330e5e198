"""``python -m suites.app.bench [overrides]`` (``make bench``): compose, validate, run, report, record.

Every run the command line asks for (a comparison's phases and each guest
group's workload included) is composed once, before Hydra takes over, so a
bad override is one ``error:`` line (exit 2) within a second, before any
guest process exists; that composition is what runs. A command with Hydra
flags (``-m``, ``--cfg``, ``--config-dir``) is composed by Hydra, per job.
"""

from __future__ import annotations

import itertools
import logging
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from suites.app.outdirs import RunDirClaim, claim_run_dir, require_makeable, require_outside_source
from suites.app.pipeline import run_command
from suites.config.compose import Composition, compose_run
from suites.config.schema import CONFIG_DIR, BenchConfig, one_line, register_configs
from suites.errors import BenchError, ConfigError, redact
from suites.record.store import sqlite_path
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run.shield import interrupt_reason, stop_on_signals


def fail(message: str, code: int = 2) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def task(composed: Composition | None) -> Callable[[DictConfig], None]:
    """Hydra's task function: what was composed before Hydra started, else this job's own composition."""
    def main(dcfg: DictConfig) -> None:
        hc = HydraConfig.get()
        # Here, not in cli(): a job launched by submitit (Slurm) never ran cli(), and submitit ignores SIGTERM,
        # which is what scancel sends; so every job, however launched, stops its guests and records itself.
        stop_on_signals()
        redact_logs()
        redact_files(Path(hc.runtime.output_dir) / str(hc.output_subdir or ".hydra"))
        try:
            comp = composed or compose_run(list(hc.overrides.task), dcfg)
            code = run_command(comp, Path(hc.runtime.output_dir), Path(hydra.utils.get_original_cwd()),
                               launcher=str(hc.runtime.choices.get("hydra/launcher", "basic")))
        except BenchError as exc:
            discard_unused(Path(hc.runtime.output_dir))
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt as exc:  # before the guests started, or a recording given up on (run/shield.py)
            out_dir = Path(hc.runtime.output_dir)
            discard_unused(out_dir)
            kept = f"what was measured is in {out_dir}" if out_dir.exists() else "nothing had started"
            print(f"{interrupt_reason(exc)}: {kept}", file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)
        if code:
            sys.exit(code)

    return main


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


def run_dir_of(args: list[str]) -> tuple[Path, bool]:
    """Where Hydra will make the run directory, up to its first interpolation (the run stamp), and whether that is
    the whole of it (a directory the user named, which two runs could be given)."""
    given = next((a.split("=", 1)[1] for a in args if a.startswith("hydra.run.dir=")), "outputs/runs/${run_stamp:}")
    fixed = given.split("${", 1)[0]
    return Path(fixed or "."), "${" not in given


def sweep_points(overrides: list[str]) -> list[tuple[list[str], list[str]]]:
    """Every job a multirun will launch: (its overrides, the swept values that name it), as Hydra's basic sweeper
    expands them (the cartesian product of the comma lists and ranges)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    choices = [[f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()] if o.is_sweep_override()
               else [o.input_line] for o in parsed]
    swept = [o.is_sweep_override() for o in parsed]
    return [(list(point), [p for p, s in zip(point, swept, strict=True) if s]) for point in itertools.product(*choices)]


def precheck_sweep(overrides: list[str]) -> None:
    """Each sweep point composed as its job will be, before any job starts: a bad value is one line naming it (it
    used to reach Hydra's launcher as a multi-line error after the first jobs had run)."""
    for point, named in sweep_points(overrides):
        try:
            compose_run(point)
        except (BenchError, HydraException, OmegaConfBaseException, ValueError) as exc:
            raise ConfigError(f"sweep point {' '.join(named) or '(all)'}: {one_line(exc)}") from exc


@dataclass
class CommandLine:
    """The command line as Hydra will read it: overrides, and the flags that change what is composed."""

    overrides: list[str]
    multirun: bool = False
    config_dir: str | None = None  # --config-dir/-cd: one more config directory, searched after configs/
    informational: bool = False  # --cfg, --help, --info, ...: Hydra prints something, nothing runs


def parse_command(args: list[str]) -> CommandLine:
    line = CommandLine([])
    it = iter(args)
    for a in it:
        if a in ("-m", "--multirun"):
            line.multirun = True
        elif a in ("--config-dir", "-cd"):
            line.config_dir = next(it, "")
        elif a.startswith("--config-dir="):
            line.config_dir = a.split("=", 1)[1]
        elif a.startswith("-"):
            line.informational = True
        else:
            line.overrides.append(a)
    return line


def with_search_path(line: CommandLine) -> list[str]:
    """The overrides, with --config-dir made a ``hydra.searchpath`` entry (where Hydra puts it: after configs/,
    before the user's own searchpath), so the precheck finds what Hydra will find."""
    if line.config_dir is None:
        return line.overrides
    folder = Path(line.config_dir).resolve()
    if not folder.is_dir():
        raise ConfigError(f"--config-dir {folder}: not a directory")
    given = [o for o in line.overrides if o.startswith("hydra.searchpath=")]
    paths = [f"file://{folder}"]
    if given:
        value = OverridesParser.create().parse_override(given[-1]).value()
        paths += list(value) if isinstance(value, list) else [str(value)]
    entry = "hydra.searchpath=[" + ",".join(f"'{p}'" for p in paths) + "]"
    return [o for o in line.overrides if o not in given] + [entry]


def precheck(line: CommandLine) -> tuple[Composition | None, RunDirClaim | None]:
    """Everything the command will run, composed before Hydra starts (a single run's composition is the one that
    runs), and the folders it writes checked (a run directory the user named is made and held for this command);
    raises the first problem. Hydra's informational flags run nothing and are Hydra's to check."""
    if line.informational:
        return None, None
    overrides = with_search_path(line)
    if line.multirun:
        precheck_sweep(overrides)
        return None, None
    composed = compose_run(overrides)
    check_out_dirs(composed.cfg)
    run_dir, named = run_dir_of(overrides)
    if not named:
        require_outside_source(run_dir, "hydra.run.dir")
        require_makeable(run_dir, "hydra.run.dir")
        return composed, None
    return composed, claim_run_dir(run_dir)


def check_out_dirs(cfg: BenchConfig) -> None:
    """The data cache, the artifact root and a local MLflow store's folder can be made, outside the source tree."""
    folders = {"data.cache_dir": Path(cfg.data.cache_dir), "artifact_dir": Path(cfg.artifact_dir)}
    db = sqlite_path(cfg.tracking_uri)
    if db is not None:
        folders["tracking_uri"] = db.parent
        if db.exists() and not db.is_file():
            raise ConfigError(f"tracking_uri: {db} is not a file (an MLflow sqlite store is one file)")
    for key, folder in folders.items():
        require_outside_source(folder, key)
        require_makeable(folder, key)


def cli() -> None:
    register_configs()
    try:
        composed, claim = precheck(parse_command(sys.argv[1:]))
    except (BenchError, HydraException, OmegaConfBaseException, ValueError) as exc:
        fail(one_line(exc))
    hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")(task(composed))()
    if claim is not None:
        claim.release()  # held to here: the run directory is this command's while it runs


if __name__ == "__main__":
    cli()
