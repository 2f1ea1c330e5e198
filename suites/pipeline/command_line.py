"""The bench command's line as Hydra will read it, and what it asks for, settled before Hydra starts: the flags
that change what is composed, every sweep point (as Hydra's basic sweeper expands them), each run composed once,
the run or sweep folder checked and held, and a sweep's exit code from the points that finished.
``suites/commands/bench.py`` is the command around it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

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
    """Every job a multirun will launch: (its overrides, the swept values that name it), as Hydra's basic sweeper
    expands them (the cartesian product of the comma lists and ranges)."""
    parsed = OverridesParser.create().parse_overrides(overrides)
    choices = [[f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()] if o.is_sweep_override()
               else [o.input_line] for o in parsed]
    swept = [o.is_sweep_override() for o in parsed]
    return [(list(point), [p for p, s in zip(point, swept, strict=True) if s]) for point in itertools.product(*choices)]


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
    informational: bool = False  # --cfg, --help, --info, ...: Hydra prints something, nothing runs


# Hydra's flags that take the next word as their value (--info's is optional: one of its topics).
VALUE_FLAGS = ("--cfg", "-c", "--package", "-p", "--config-name", "-cn", "--config-path", "-cp")
INFO_TOPICS = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")


def parse_command(args: list[str]) -> CommandLine:
    line = CommandLine([])
    i = 0
    while i < len(args):
        a, following = args[i], args[i + 1] if i + 1 < len(args) else ""
        i += 1
        if a in ("-m", "--multirun"):
            line.multirun = True
        elif a in ("--config-dir", "-cd"):
            if not following or following.startswith("-"):
                raise ConfigError(f"{a}: needs a folder (--config-dir <folder>: one more config directory)")
            line.config_dir, i = following, i + 1
        elif a.startswith("--config-dir="):
            line.config_dir = a.split("=", 1)[1]
        elif a.startswith("-"):
            line.informational = True
            if a in VALUE_FLAGS or (a in ("--info", "-i") and following in INFO_TOPICS):
                i += 1  # the flag's value, not an override
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
