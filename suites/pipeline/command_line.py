"""The bench command's line as Hydra will read it, and what it asks for, settled before Hydra starts: the flags
that change what is composed (read by Hydra's own argument parser), every sweep point (expanded by Hydra's basic
sweeper), each run composed once, the run or sweep folder checked and held, and a sweep's exit code from the points
that finished. Nothing here re-implements Hydra's grammar: it asks Hydra. ``suites/commands/bench.py`` is the
command around it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.utils import get_args_parser
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from suites.config.compose import Composition, compose_run, refuse_retired, without_hydra
from suites.config.schema import one_line
from suites.errors import BenchError, ConfigError
from suites.pipeline.hydra_dirs import HydraDirs, hydra_node, run_dirs, sweep_dirs
from suites.pipeline.jobs import SweepState
from suites.pipeline.prechecks import check_out_dirs, require_parseable
from suites.record.outdirs import RunDirClaim, claim_run_dir, half_written_beside
from suites.record.sweep_points import collect
from suites.run.outcome import EXIT_INTERRUPTED, EXIT_PARTIAL

__all__ = ["Checked", "CommandLine", "parse_command", "precheck", "sweep_exit_code", "sweep_points"]


def sweep_points(overrides: list[str]) -> list[tuple[list[str], list[str]]]:
    """Every job a multirun will launch: (its overrides, the swept values that name it), expanded by Hydra's basic
    sweeper itself (the cartesian product of the comma lists and ranges, in its order, each job's overrides as it
    hands them to the job)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    swept = {o.get_key_element() for o in parsed if o.is_sweep_override()}
    points = [point for batch in BasicSweeper.split_arguments(parsed, None) for point in batch]
    return [(list(point), [p for p in point if p.split("=", 1)[0] in swept]) for point in points]


def precheck_sweep(overrides: list[str]) -> tuple[list[tuple[list[str], list[str]]], list[DictConfig]]:
    """Each sweep point composed as its job will be, before any job starts: a bad value is one line naming it, not
    Hydra's launcher's multi-line error after the first jobs ran. The points, in order, and each one's composition
    with Hydra's node (its job number set, as the launcher will)."""
    points, nodes = sweep_points(overrides), []
    if not points:
        swept = [o for o in overrides if "range(" in o or "," in o] or overrides
        raise ConfigError(f"the sweep has no points ({' '.join(swept)} gives no value): nothing to run")
    for num, (point, named) in enumerate(points):
        try:
            nodes.append(hydra_node(point, num))
            check_out_dirs(compose_run(point, without_hydra(nodes[-1])).cfg)
        except (BenchError, HydraException, OmegaConfBaseException, ValueError) as exc:
            raise ConfigError(f"sweep point {' '.join(named) or '(all)'}: {one_line(exc)}") from exc
    return points, nodes


@dataclass
class CommandLine:
    """The command line as Hydra will read it: overrides, and the flags that change what is composed."""

    overrides: list[str]
    multirun: bool = False
    config_dir: str | None = None  # --config-dir/-cd: one more config directory, searched after configs/
    informational: bool = False  # --cfg, --help, --info, ...: Hydra prints something, nothing runs (or with
    # --config-name/--config-path/--package, Hydra composes what runs)


def parse_command(args: list[str]) -> CommandLine:
    """``args`` read by Hydra's own argument parser (what ``hydra.main`` will read); a flag it refuses is one
    ConfigError, not argparse's usage and exit."""
    parser = get_args_parser()

    def refuse(message: str) -> None:
        raise ConfigError(f"{message} (Hydra's flags: --help, --hydra-help, --cfg, --info, -m, --config-dir, ...)")

    parser.error = refuse  # type: ignore[method-assign]
    got = parser.parse_args(args)
    # Hydra prints (--cfg, --help, --info, ...) or composes another config or package: the precheck checks the
    # overrides, and Hydra composes what it runs
    informational = bool(got.help or got.hydra_help or got.cfg or got.info or got.shell_completion
                         or got.experimental_rerun or got.config_name or got.config_path or got.package)
    return CommandLine(list(got.overrides), bool(got.multirun), got.config_dir, informational)


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


@dataclass
class Checked:
    """What the precheck settled: the composition that runs, the folder this command holds, and the overrides that
    pin Hydra on the folders checked."""

    composed: Composition | None = None
    claim: RunDirClaim | None = None
    dirs: HydraDirs = field(default_factory=HydraDirs)
    named: list[list[str]] = field(default_factory=list)  # a sweep's points, by their swept values


def precheck(line: CommandLine) -> Checked:
    """Everything the command will run, composed before Hydra starts (a single run's composition is the one that
    runs), and the folders it writes checked as Hydra resolves them (the run's or the sweep's folder is made and
    held for this command); raises the first problem. Hydra's informational flags run nothing."""
    require_parseable(line.overrides)
    refuse_retired(line.overrides)  # before Hydra composes: it would say only that `experiment` is taken
    overrides = with_search_path(line)
    if line.informational:  # Hydra prints (--cfg job, --help, ...); what it composes is checked first
        if line.multirun:
            precheck_sweep(overrides)
        elif line.overrides:
            compose_run(overrides, without_hydra(hydra_node(overrides)))
        return Checked()
    if line.multirun:
        points, nodes = precheck_sweep(overrides)
        dirs = sweep_dirs(points, nodes)
        assert dirs.sweep_dir is not None
        return Checked(None, claim_run_dir(dirs.sweep_dir, "hydra.sweep.dir"), dirs, [n for _, n in points])
    hcfg = hydra_node(overrides)  # one composition, Hydra's node with it: the run's config and where it writes
    composed = compose_run(overrides, without_hydra(hcfg))
    check_out_dirs(composed.cfg)
    dirs = run_dirs(hcfg)
    assert dirs.run_dir is not None
    claim = claim_run_dir(dirs.run_dir)
    killed = half_written_beside(dirs.run_dir)
    if killed is not None:
        print(f"note: {killed}: no results.json: a run that was killed? (its config and logs are there)")
    return Checked(composed, claim, dirs)


def sweep_exit_code(sweep_dir: Path, sweep: SweepState) -> int:
    """0 when every point finished ok; 130 after an interrupt; else 1 (each point's reason is in the summary)."""
    if sweep.interrupted_at is not None:
        return EXIT_INTERRUPTED
    rows = collect(sweep_dir)
    return 0 if len(rows) == len(sweep.named) and all(r.status == "ok" for r in rows) else EXIT_PARTIAL
